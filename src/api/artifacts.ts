// What a run produced, in the production service's shape: `artifacts` on the run record, and
// `GET /agent/artifacts/{uid}` for one artifact's details. New artifact types appear over time,
// so the type is open and unknown ones are kept, never refused.

export const KNOWN_ARTIFACT_TYPES = ['PLAN', 'PULL_REQUEST', 'SCREENSHOT', 'FILE'] as const;

export type ArtifactType = (typeof KNOWN_ARTIFACT_TYPES)[number] | (string & {});

/** The `data` of the known types, all fields optional: a client reads what is there. */
export interface ArtifactData {
  /** FILE, SCREENSHOT, and sometimes PLAN. */
  artifact_uid?: string;
  /** PULL_REQUEST. */
  url?: string;
  branch?: string;
  /** FILE. */
  filepath?: string;
  filename?: string;
  mime_type?: string;
  description?: string;
  size?: number;
  /** PLAN. */
  document_uid?: string;
  title?: string;
  [field: string]: unknown;
}

/** One item of a run record's `artifacts`. */
export interface Artifact {
  artifact_type: ArtifactType;
  created_at?: string;
  data: ArtifactData;
  [field: string]: unknown;
}

/** Answer of `GET /agent/artifacts/{uid}`: the details, with a time-limited download URL for files. */
export interface ArtifactDetails {
  artifact_uid?: string;
  artifact_type?: ArtifactType;
  /** The signed download URL (the service has called it `download_url` and `url`). */
  download_url?: string;
  url?: string;
  expires_at?: string;
  data?: ArtifactData;
  [field: string]: unknown;
}
