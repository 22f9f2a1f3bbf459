/**
 * A pass run every `ms`, never two at once (a tick while one runs is skipped), its failure handed to
 * `onError` (the next tick tries again); the timer keeps no process alive. stop() waits for the pass running.
 */
export function every(ms: number, pass: () => Promise<unknown>, onError: (err: unknown) => void): { stop: () => Promise<void> } {
  let running: Promise<void> | undefined;
  const timer = setInterval(() => {
    running ??= pass().then(() => undefined, onError).finally(() => (running = undefined));
  }, ms);
  timer.unref();
  return {
    stop: async () => {
      clearInterval(timer);
      await running;
    },
  };
}
