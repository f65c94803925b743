'use strict';
// Options as the core reads them: the properties the core names, each read
// once from the user's object, as plain JSON values. The core checks,
// defaults and ranges them (a flow's options, a hosted provider's).

/**
 * A value as the core reads it: JSON scalars as they are, and a marker for
 * what JSON cannot say (a non-finite number, a string that cannot cross
 * exactly, anything else by its type). No option is known here.
 */
function plainValue(value) {
  switch (typeof value) {
    case 'number':
      return Number.isFinite(value) ? value : { $float: Number.isNaN(value) ? 'nan' : value > 0 ? 'inf' : '-inf' };
    case 'string':
      return value.isWellFormed() ? value : { $loneSurrogate: true };
    case 'boolean':
    case 'undefined':
      return value;
    default:
      return value === null ? null : { $type: typeof value };
  }
}

/** The options `names` of `options`, each read once, as the core's JSON input. */
function plainOptions(options, names) {
  const values = {};
  for (const name of names) values[name] = plainValue(options[name]);
  return JSON.stringify(values);
}

module.exports = { plainValue, plainOptions };
