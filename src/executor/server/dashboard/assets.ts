// The dashboard's own stylesheet and script, served as files (/dashboard/app.css, /dashboard/app.js)
// so the Content-Security-Policy allows no inline style or script at all. The script only adds the
// live parts: everything it shows arrives as HTML the server rendered and escaped.

export const CSS = `
:root{color-scheme:light dark;--bg:#fff;--fg:#1f2328;--muted:#59636e;--line:#d1d9e0;--code:#f6f8fa;--link:#0550ae;
--ok:#1a7f37;--bad:#cf222e;--run:#9a6700;--q:#59636e;--add:#dafbe1;--del:#ffebe9;--hunk:#ddf4ff}
@media (prefers-color-scheme:dark){:root{--bg:#0d1117;--fg:#e6edf3;--muted:#9198a1;--line:#3d444d;--code:#151b23;
--link:#6cb6ff;--ok:#3fb950;--bad:#f85149;--run:#d29922;--q:#9198a1;--add:#12361f;--del:#3c1618;--hunk:#0c2d6b}}
*{box-sizing:border-box}
body{font:15px/1.5 system-ui,sans-serif;margin:0;background:var(--bg);color:var(--fg)}
a{color:var(--link)}
header{display:flex;flex-wrap:wrap;gap:.5rem 1.2rem;align-items:center;padding:.6rem 1rem;border-bottom:1px solid var(--line)}
header nav{display:flex;gap:1rem}header nav a[aria-current]{font-weight:600}
.brand{font-weight:700;text-decoration:none;color:var(--fg)}
.sign-out{margin-left:auto;display:flex;gap:.5rem;align-items:center}.who{color:var(--muted)}
main{max-width:72rem;margin:0 auto;padding:1rem}
h1{font-size:1.5rem;margin:.5rem 0 1rem;overflow-wrap:anywhere}
button,input,select{font:inherit;color:inherit;background:var(--bg);border:1px solid var(--line);border-radius:6px;padding:.35rem .6rem}
button{cursor:pointer}button:focus-visible,a:focus-visible,input:focus-visible,select:focus-visible,summary:focus-visible{outline:2px solid var(--link);outline-offset:2px}
.danger{border-color:var(--bad);color:var(--bad)}
.badge{display:inline-block;padding:0 .5rem;border-radius:1rem;font-size:.8rem;font-weight:600;border:1px solid currentColor;white-space:nowrap}
.s-succeeded{color:var(--ok)}.s-failed,.s-error{color:var(--bad)}.s-inprogress,.s-claimed,.s-blocked{color:var(--run)}.s-queued,.s-pending,.s-cancelled{color:var(--q)}
.counts{list-style:none;display:flex;flex-wrap:wrap;gap:.4rem 1rem;padding:0;margin:0 0 1rem}
.filters{display:flex;flex-wrap:wrap;gap:.5rem 1rem;align-items:end;margin-bottom:1rem}
.filters label{display:flex;flex-direction:column;font-size:.85rem;color:var(--muted)}
table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:.4rem .6rem .4rem 0;vertical-align:top;border-bottom:1px solid var(--line)}
.runs td a{overflow-wrap:anywhere}
.facts{width:auto}.facts th{color:var(--muted);font-weight:500}
.lines{white-space:pre-line}
pre{background:var(--code);padding:.6rem;overflow:auto;white-space:pre-wrap;word-break:break-word;border-radius:6px;margin:.3rem 0}
.diff span{display:block}.d-add{background:var(--add)}.d-del{background:var(--del)}.d-hunk{background:var(--hunk)}.d-file{font-weight:600}
.transcript{list-style:none;padding:0}.ev{margin:.5rem 0}.ev time{color:var(--muted);font-family:ui-monospace,monospace}
.muted,.live-status,.empty{color:var(--muted)}.error{color:var(--bad);font-weight:600}
.copy{width:100%;font-family:ui-monospace,monospace;font-size:.85rem}
.run-id{display:flex;gap:.5rem;align-items:center}.run-id input{max-width:28rem}
.cancel{margin:1rem 0}.cancel summary{display:inline-block;cursor:pointer;border:1px solid var(--bad);color:var(--bad);border-radius:6px;padding:.35rem .6rem}
.sign-in{display:flex;flex-direction:column;gap:.5rem;max-width:24rem}
.paging{display:flex;justify-content:space-between;margin:1rem 0}
.sr-only{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}
@media (max-width:640px){
.runs thead{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0)}
.runs tr{display:block;border-bottom:1px solid var(--line);padding:.4rem 0}.runs td{display:flex;gap:.6rem;border:0;padding:.1rem 0}
.runs td::before{content:attr(data-label);color:var(--muted);min-width:6.5rem}
.sign-out{margin-left:0}}
`;

export const JS = `'use strict';
(function () {
  function parse(html) {
    var t = document.createElement('template');
    t.innerHTML = html;
    return t.content;
  }
  var source, stream;
  var status = document.getElementById('live-status');
  var table = document.getElementById('runs');
  if (table && window.EventSource) {
    source = new EventSource('/live' + location.search);
    source.addEventListener('open', function () { if (status) status.textContent = 'Live: updates appear as they happen.'; });
    source.addEventListener('run', function (m) {
      var data = JSON.parse(m.data);
      var row = parse(data.html).firstElementChild;
      var old = document.getElementById(row.id);
      if (old) old.replaceWith(row);
      else if (table.dataset.live === 'list') table.tBodies[0].prepend(row);
      var empty = document.getElementById('empty');
      if (empty && table.tBodies[0].rows.length) empty.remove();
    });
    source.addEventListener('counts', function (m) {
      document.getElementById('counts').replaceChildren(parse(JSON.parse(m.data).html));
    });
  }
  var run = document.getElementById('run');
  if (run && run.dataset.live === 'live' && window.EventSource) {
    stream = new EventSource('/live?run=' + encodeURIComponent(run.dataset.run) + '&after=' + run.dataset.after);
    stream.addEventListener('events', function (m) {
      document.getElementById('transcript').append(parse(JSON.parse(m.data).html));
    });
    stream.addEventListener('run', function (m) {
      var data = JSON.parse(m.data);
      document.getElementById('facts').replaceChildren(parse(data.html));
      if (data.done) {
        stream.close();
        var cancel = document.getElementById('cancel');
        if (cancel) cancel.remove();
        setTimeout(function () { location.reload(); }, 500);
      }
    });
  }
  // The session ended (signed out elsewhere, expired, or its key revoked): show the sign-in page.
  [source, stream].forEach(function (es) {
    if (es) es.addEventListener('signed-out', function () { es.close(); location.reload(); });
  });
  document.querySelectorAll('input.copy').forEach(function (input) {
    input.addEventListener('focus', function () { input.select(); });
  });
})();
`;
