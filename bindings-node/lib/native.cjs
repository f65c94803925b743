'use strict';
// Loads the native addon. (The per-platform package loader replaces this.)
module.exports = require('../sandbox-reclaim.node');
