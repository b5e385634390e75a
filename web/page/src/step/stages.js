// Section 2's stages: an iteration is shown as Draft → Verify → one Accept stage per guess (or
// tree candidate) that verification tested → Correct (or Bonus). Pure functions over the
// iterations so far, history[i] = { view, stages }, and a cursor { it, st } into them.

/**
 * The stages' names, the lesson's words (its steps 1–4): the stage list above the panel shows
 * them, and every caption starts with its stage's number and name (step/captions.js), for a chain
 * and a tree alike (a tree's accepted path is a prefix of one of its branches), and for a bonus
 * (the lesson's step 4 covers both endings).
 */
export const STAGE_NAMES = {
  draft: 'Draft',
  verify: 'Verify in parallel',
  accept: 'Accept a prefix',
  correct: 'Correct once',
};
const STAGE_NUMBERS = { draft: 1, verify: 2, accept: 3, correct: 4 };

/** The start of a stage's caption: "3 · Accept a prefix". */
export function stageHead(kind) {
  return `${STAGE_NUMBERS[kind]} · ${STAGE_NAMES[kind]}`;
}

/** The stages of one iteration's view (records.js recordToView). */
export function stagesOf(view) {
  const st = [{ kind: 'draft' }, { kind: 'verify' }];
  if (view.tree) {
    // One stage per candidate tested, in the order verification tested them (depth by depth,
    // siblings in turn): the records list the nodes in that order.
    view.tree.nodes.forEach((n, i) => {
      if (n.status !== 'unexamined') st.push({ kind: 'accept', i });
    });
  } else {
    view.positions.forEach((pos, i) => {
      if (pos.examined) st.push({ kind: 'accept', i });
    });
  }
  st.push({ kind: 'correct' });
  return st;
}

// What the current stage reveals: p rows from "verify" on, verdicts up to the current accept,
// the correction/bonus at "correct".
export function revealState(view, stages, st) {
  const stage = stages[st];
  const kinds = stages.slice(0, st + 1).map((x) => x.kind);
  const verdicts = new Set(
    stages
      .slice(0, st + 1)
      .filter((x) => x.kind === 'accept')
      .map((x) => x.i),
  );
  return {
    stage,
    showP: kinds.includes('verify'),
    verdicts,
    tested: verdicts, // tree mode: the nodes whose test is shown
    current: stage.kind === 'accept' ? stage.i : -1,
    final: stage.kind === 'correct',
  };
}

/**
 * One stage forward: { cursor } (the next stage, or the first of the next iteration shown
 * before), 'more' (past the last stage of the last iteration: step the decoder), or null (the
 * decoding is done).
 */
export function stepForward(history, cursor) {
  const cur = history[cursor.it];
  if (cursor.st < cur.stages.length - 1) return { cursor: { it: cursor.it, st: cursor.st + 1 } };
  if (cursor.it < history.length - 1) return { cursor: { it: cursor.it + 1, st: 0 } };
  return cur.view.done ? null : 'more';
}

/** One stage back (the last stage of the iteration before); the same cursor at the very start. */
export function stepBack(history, cursor) {
  if (cursor.st > 0) return { it: cursor.it, st: cursor.st - 1 };
  if (cursor.it > 0) return { it: cursor.it - 1, st: history[cursor.it - 1].stages.length - 1 };
  return cursor;
}

/**
 * The Back / Next buttons: { backDisabled, nextDisabled, nextText } (nextText null: unchanged,
 * nothing shown yet).
 */
export function buttonsState(history, cursor, busy) {
  const atStart = cursor.it === 0 && cursor.st === 0;
  const out = {
    backDisabled: busy || !history.length || atStart,
    nextDisabled: busy || !history.length,
    nextText: null,
  };
  if (history.length) {
    const cur = history[cursor.it];
    const last = cursor.st === cur.stages.length - 1;
    out.nextText = last ? 'Next iteration →' : 'Next →';
    if (last && cur.view.done && cursor.it === history.length - 1) out.nextDisabled = true;
  }
  return out;
}
