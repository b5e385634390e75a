// What a learner's files for one role of section 4 are, and what they lack, from their names
// alone: said when they are picked (models/own-files.js) and checked again by the worker before
// it reads them (worker/sources.js). Issue 56: a folder without tokenizer.json was accepted for
// the target and refused only once the draft was given.

/** Files of a Hugging Face folder the page reads (others are ignored). */
export const FOLDER_FILE =
  /^(config\.json|generation_config\.json|tokenizer\.json|tokenizer_config\.json|model\.safetensors\.index\.json|.+\.safetensors)$/;

/** A file of a checkpoint (GGUF, or a Hugging Face folder's JSON / weights) rather than ours. */
export const isCheckpointFile = (f) => /\.(gguf|json)$/i.test(f.name) || f.name === 'model.safetensors';

/**
 * Whether files given together for a role are a Hugging Face folder's: not a GGUF file, and not
 * one file of ours (a single file that is neither JSON nor model.safetensors). The worker also
 * knows a GGUF file by its first bytes; by name is what the page can tell at once.
 * @param {{ name: string }[]} files
 */
export function isFolder(files) {
  if (files.some((f) => /\.gguf$/i.test(f.name))) return false;
  return !(files.length === 1 && !/\.json$/i.test(files[0].name) && files[0].name !== 'model.safetensors');
}

/**
 * What a Hugging Face folder's files lack, as a sentence naming the role and what was given
 * (null: nothing): config.json, tokenizer.json and the weights (.safetensors).
 * @param {string} role
 * @param {string[]} names  every file given for the role
 */
export function folderProblem(role, names) {
  const missing = ['config.json', 'tokenizer.json'].filter((n) => !names.includes(n));
  if (!names.some((n) => /\.safetensors$/i.test(n))) missing.push('its weights (.safetensors)');
  if (!missing.length) return null;
  const list = missing.length > 1 ? `${missing.slice(0, -1).join(', ')} and ${missing.at(-1)}` : missing[0];
  return `${role}: a Hugging Face folder needs ${list} (given: ${names.map((n) => `“${n}”`).join(', ')}).`;
}
