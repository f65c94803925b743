#!/usr/bin/env node
'use strict';
// `npx sandbox-reclaim ...`: the operator command (see README.md, "The
// `sandbox-reclaim` command"). Everything happens in lib/cli.cjs.

/** Exits with `code` once what JS wrote has drained, like the binary, whatever handles a providers module left open. */
function exit(code) {
  process.exitCode = code;
  process.stdout.write('', () => process.stderr.write('', () => process.exit(code)));
}

require('../lib/cli.cjs')
  .main(process.argv.slice(2))
  .then(exit, (error) => {
    process.stderr.write(`sandbox-reclaim: error: ${error && error.stack ? error.stack : String(error)}\n`);
    exit(1);
  });
