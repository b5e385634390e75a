// --extern-pre-js of the threaded module's Node glue (cmake/wasm.cmake): Emscripten 3.1.6's Node
// code paths use CommonJS's require, __filename and __dirname, which an ES module lacks; these
// module-scoped ones stand in (never globals: the glue keeps calling require later).
import { createRequire as specdecCreateRequire } from 'node:module';
import { fileURLToPath as specdecFileURLToPath } from 'node:url';
import { dirname as specdecDirname } from 'node:path';
const require = specdecCreateRequire(import.meta.url);
const __filename = specdecFileURLToPath(import.meta.url);
const __dirname = specdecDirname(__filename);
