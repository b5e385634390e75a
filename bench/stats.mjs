// Summaries the benchmark scripts share: medians of repeated runs with their range.

/** Median (the mean of the two middle values for an even count). */
export const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const n = s.length;
  return n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
};

/** { median, min, max, runs } of repeated measurements. */
export const stats = (xs) => ({
  median: median(xs),
  min: Math.min(...xs),
  max: Math.max(...xs),
  runs: xs.length,
});

/** "median [min–max]" with d decimals ('–' for none). */
export const cell = (s, d = 2) => (s ? `${s.median.toFixed(d)} [${s.min.toFixed(d)}–${s.max.toFixed(d)}]` : '–');
