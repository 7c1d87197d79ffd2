// dq-client: the dq delay queue's official Node client, no dependency.
// See README.md and docs/client.md.
"use strict";
const { Client, DqError, StaleToken } = require("./lib/client");
const { Receiver, Callback, WebhookVerificationError } = require("./lib/webhooks");

module.exports = { Client, DqError, StaleToken, Receiver, Callback, WebhookVerificationError };
