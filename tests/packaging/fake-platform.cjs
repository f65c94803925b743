'use strict';
// Preload (`node --require`) that makes this process look like another
// platform, for the loader test: SANDBOX_RECLAIM_FAKE_PLATFORM is
// `<process.platform>,<process.arch>[,<glibc|musl>]`. It redefines
// process.platform and process.arch, and on Linux answers the loader's libc
// probe (reading /usr/bin/ldd) as that libc's ldd would.
const fs = require('node:fs');

const spec = process.env.SANDBOX_RECLAIM_FAKE_PLATFORM;
if (spec) {
  const [platform, arch, libc] = spec.split(',');
  Object.defineProperty(process, 'platform', { value: platform, enumerable: true, configurable: true });
  Object.defineProperty(process, 'arch', { value: arch, enumerable: true, configurable: true });
  const readFileSync = fs.readFileSync;
  fs.readFileSync = function fakeReadFileSync(path, ...rest) {
    if (path === '/usr/bin/ldd') {
      if (libc === 'musl') return '#!/bin/sh\nexec /lib/ld-musl-x86_64.so.1 --list "$@"\n';
      if (libc === 'glibc') return '#!/bin/bash\n# This file is part of the GNU C Library.\n';
      const error = new Error(`ENOENT: no such file or directory, open '${path}'`);
      error.code = 'ENOENT';
      throw error;
    }
    return readFileSync.call(this, path, ...rest);
  };
}
