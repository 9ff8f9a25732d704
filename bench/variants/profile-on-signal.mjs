/**
 * Preload (`node --import bench/variants/profile-on-signal.mjs ...`) for `npm run bench -- --profile`: the first
 * SIGWINCH starts a V8 CPU profile of the main thread, the next one writes it to
 * $BENCH_PROFILE_DIR/<role>-<pid>-<n>.cpuprofile. The bench signals around the burst, so the profile covers
 * the burst and not the start-up. SIGWINCH because its default is to do nothing, and because SIGUSR2 stops both
 * the Temporal worker (its Runtime's shutdownSignals) and the Nest API (enableShutdownHooks). Bench only.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import path from 'node:path';

const dir = process.env.BENCH_PROFILE_DIR ?? '.';
const role = process.env.BENCH_PROFILE_ROLE ?? 'node';
const session = new Session();
session.connect();
const post = (method, params) =>
  new Promise((resolve, reject) => session.post(method, params, (err, res) => (err ? reject(err) : resolve(res))));
let running = false;
let n = 0;
process.on('SIGWINCH', () => {
  void (async () => {
    if (!running) {
      running = true;
      await post('Profiler.enable');
      await post('Profiler.setSamplingInterval', { interval: 1000 });
      await post('Profiler.start');
    } else {
      running = false;
      const { profile } = await post('Profiler.stop');
      mkdirSync(dir, { recursive: true });
      writeFileSync(path.join(dir, `${role}-${process.pid}-${++n}.cpuprofile`), JSON.stringify(profile));
    }
  })().catch((err) => process.stderr.write(`profile-on-signal: ${err}\n`));
});
