// Preloaded into Node MCP servers started by the tests (NODE_OPTIONS=--require ...):
// servers that call listen(port) without a host would bind every interface; tests bind 127.0.0.1 only.
"use strict";
const net = require("net");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if (typeof args[0] === "number" || (typeof args[0] === "string" && /^\d+$/.test(args[0]))) {
    if (args.length === 1 || typeof args[1] === "function") {
      args.splice(1, 0, "127.0.0.1");
    }
  } else if (args[0] && typeof args[0] === "object" && !args[0].path && !args[0].host) {
    args[0] = { ...args[0], host: "127.0.0.1" };
  }
  return listen.apply(this, args);
};
