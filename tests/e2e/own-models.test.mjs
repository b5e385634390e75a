// Section 4, "Your own models": a learner's model files, chosen with the file picker or
// dropped on a zone, go through the same loader as the page's models. A malformed file shows
// the loader's message in an alert and changes nothing; valid files replace the target and/or
// the draft, the runs use them, and "Back to the page's models" restores the shipped pair.
// Meanwhile the Weights radio says what the loaded models hold (an 8-bit file loads as int8) and
// is locked, with a sentence why, until the page's models are back.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { openPage, setInput, text, assertClean, dropFile, repoRoot } from './harness.mjs';
import { fileOutcome, weightsRadio } from './section4.mjs';

const fixture = (name) => path.join(repoRoot, 'tests/fixtures', name);
let env;
let tinyF32;
before(async () => {
  tinyF32 = await readFile(fixture('tiny_f32.safetensors'));
  env = await openPage({ models: true });
});
after(() => env?.close());

test('a malformed file from the picker: the loader’s message in an alert, nothing changes', async () => {
  const { page } = env;
  const infoBefore = await text(page, '#model-info');
  const truncated = tinyF32.subarray(0, 5000);
  await page.setInputFiles('#model-file-target', {
    name: 'broken.safetensors',
    mimeType: 'application/octet-stream',
    buffer: truncated,
  });
  const out = await fileOutcome(page);
  assert.equal(out.state, 'error');
  assert.match(
    out.error,
    /^target file “broken\.safetensors”: model file: tensor '.*': data_offsets .* are outside the data section/,
  );
  assert.equal(await page.getAttribute('#model-file-error', 'role'), 'alert');
  assert.equal(await text(page, '#model-info'), infoBefore, 'the models did not change');
  assert.equal(await page.isDisabled('#run-spec'), false, 'still usable');
});

test('malformed files dropped on a zone: header, config and non-finite weights', async () => {
  const { page } = env;
  const headerLength = Number(tinyF32.readBigUInt64LE(0));
  const header = tinyF32.subarray(8, 8 + headerLength).toString('latin1');
  const withHeader = (h) => {
    const hb = Buffer.from(h, 'latin1');
    const len = Buffer.alloc(8);
    len.writeBigUInt64LE(BigInt(hb.length));
    return Buffer.concat([len, hb, tinyF32.subarray(8 + headerLength)]);
  };
  const nanWeights = Buffer.from(tinyF32);
  nanWeights.writeFloatLE(NaN, 8 + headerLength + 4 * 7); // transformer.wte.weight[7]
  const cases = [
    [
      'not-a-model.safetensors',
      Buffer.from('this is not a safetensors file'),
      /header length \d+ exceeds the limit of 1048576 bytes/,
    ],
    ['empty.safetensors', Buffer.alloc(0), /0 bytes is too short for the 8-byte header length/],
    [
      'deep.safetensors',
      withHeader(header.replace('"n_layer":"2"', '"n_layer":"100000"')),
      /n_layer = 100000 is outside 1\.\.128/,
    ],
    [
      'heads.safetensors',
      withHeader(header.replace('"n_head":"4"', '"n_head":"3"')),
      /n_head = 3 does not divide n_embd = 32/,
    ],
    ['nan.safetensors', nanWeights, /tensor 'transformer\.wte\.weight' holds a non-finite value \(nan\) at index 7/],
  ];
  for (const [name, bytes, message] of cases) {
    await dropFile(page, '#drop-draft', name, bytes);
    const out = await fileOutcome(page);
    assert.equal(out.state, 'error', name);
    assert.ok(out.error.startsWith(`draft file “${name}”: `), out.error);
    assert.match(out.error, message);
  }
});

test('valid files (picker for the target, drop for the draft) replace the models and run', async () => {
  const { page } = env;
  assert.deepEqual(await weightsRadio(page), { checked: ['f32'], disabled: [], own: null }, 'the page’s float32 pair');
  // An 8-bit target file (stored quantized): loaded as int8; the radio does not claim float32.
  await page.setInputFiles('#model-file-target', fixture('tiny_int8.safetensors'));
  let out = await fileOutcome(page);
  assert.equal(out.state, 'loaded', out.error);
  assert.equal(await page.evaluate(() => window.specdecPage.modelClient.info.target.weights), 'int8');
  let radio = await weightsRadio(page);
  assert.deepEqual(
    [radio.checked, radio.disabled],
    [[], ['f32', 'int8']],
    'an int8 target, the float32 draft: neither',
  );
  assert.match(
    radio.own,
    /^Your own model files are loaded: an int8 target and a float32 draft, as the files hold them\. Go back to the page’s models \(or pick a pair\) to choose float32 or int8\.$/,
  );
  await page.setInputFiles('#model-file-target', fixture('tiny_f32.safetensors'));
  out = await fileOutcome(page);
  assert.equal(out.state, 'loaded', out.error);
  assert.match(out.status, /Loaded the target file “tiny_f32\.safetensors”/);
  assert.equal(out.error, '', 'the alert is cleared');
  radio = await weightsRadio(page);
  assert.deepEqual([radio.checked, radio.disabled], [['f32'], ['f32', 'int8']]);
  assert.match(radio.own, /^Your own model files are loaded: float32 weights, as the files hold them\./);
  await dropFile(
    page,
    '#drop-draft',
    'tiny_draft_f16.safetensors',
    await readFile(fixture('tiny_draft_f16.safetensors')),
  );
  out = await fileOutcome(page);
  assert.equal(out.state, 'loaded', out.error);
  const info = await text(page, '#model-info');
  assert.match(info, /Target: file “tiny_f32\.safetensors”.*2 layers/);
  assert.match(info, /Draft: file “tiny_draft_f16\.safetensors”.*1 layers, width 8/);
  assert.doesNotMatch(info, /same demo weights/, 'the two roles now differ');

  await setInput(page, 'gen-max', 40);
  await setInput(page, 'gen-temp', 1);
  await page.click('#run-spec');
  await page.waitForFunction(() => document.getElementById('spec-state').dataset.state === 'done', null, {
    timeout: 60000,
  });
  assert.match(await text(page, '#spec-state'), /done, 40 tokens/);
  // This draft disagrees with the target: corrections appear.
  assert.ok((await page.locator('#spec-text .tok.cor').count()) > 0, 'corrections from the residual');

  await page.click('#model-file-reset');
  out = await fileOutcome(page);
  assert.equal(out.state, 'loaded', out.error);
  assert.doesNotMatch(await text(page, '#model-info'), /file “/);
  assert.equal(await page.isHidden('#model-file-reset'), true);
  assert.deepEqual(await weightsRadio(page), { checked: ['f32'], disabled: [], own: null }, 'the choice is free again');
  await setInput(page, 'gen-max', 200);
  await setInput(page, 'gen-temp', 0.8);
  assertClean(assert, env.watch);
});
