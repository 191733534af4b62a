// The action's path inputs follow the workspace-file rule, which lives in common/ so that the executor
// helper action (which may not import action/) applies the same one to its `config` input.
export * from '../common/workspace-file.js';
