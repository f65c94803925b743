// TanStack-shaped Sprites records (tests/fakes/sprites.mjs, proven by the
// official SDKs in vendor-sdks.test.mjs): TanStack's Sprites provider names
// each sprite after the 16-hex sandbox key, records `provider: 'sprites'`
// with that name as `providerSandboxId`, and sets no labels. The example
// reclaims such a record through `SpritesProvider` and sweeps the leftover
// whose record was deleted, never a stranger's or another owner's.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';

import { startFakeSprites } from '../fakes/sprites.mjs';

const CREATED = Date.UTC(2026, 0, 1);

test('examples/node/sprites-tanstack.mjs reclaims TanStack-shaped records and sweeps only the registered leftover', { timeout: 60_000 }, async () => {
  const fake = await startFakeSprites();
  try {
    fake.seed([
      { name: '0123456789abcdef', status: 'running', createdAt: CREATED }, // the run's: no labels
      { name: 'fedcba9876543210', status: 'cold', createdAt: CREATED }, // an earlier run's, its record gone
      { name: '00000000deadbeef', status: 'warm', createdAt: CREATED }, // nobody's record ever named it
      { name: 'theirs', labels: ['io.sandbox-reclaim.owner=another-team'], createdAt: CREATED },
    ]);
    const example = new URL('../../examples/node/sprites-tanstack.mjs', import.meta.url);
    const env = { ...process.env, SPRITES_API_KEY: fake.key, SPRITES_API_URL: fake.url };
    delete env.SPRITE_TOKEN;
    const stdout = await new Promise((resolveRun, reject) => {
      execFile(process.execPath, [example.pathname, '0123456789abcdef', 'fedcba9876543210'], { env, timeout: 50_000 }, (error, out, err) =>
        (error ? reject(new Error(`${error.message}\n${err}`)) : resolveRun(out)));
    });
    assert.match(stdout, /reclaimed sprite 0123456789abcdef: deleted for good/);
    assert.match(stdout, /listed 3, destroyed 1 orphans; still leaking: false/);
    assert.deepEqual(fake.state().alive, ['00000000deadbeef', 'theirs'], 'a stranger and another owner\'s sprite stay');
    assert.ok(!stdout.includes(fake.key), 'the key is never printed');
  } finally {
    await fake.close();
  }
});

test('examples/node/sprites-tanstack.mjs refuses a name TanStack would not make', async () => {
  const example = new URL('../../examples/node/sprites-tanstack.mjs', import.meta.url);
  const code = await new Promise((resolveRun) => {
    execFile(process.execPath, [example.pathname, 'not-a-key'], { timeout: 20_000 }, (error) => resolveRun(error?.code ?? 0));
  });
  assert.equal(code, 2);
});
