import assert from "node:assert/strict";
import { pipSources } from "./registry_settings.ts";

Deno.test("pip sources: variables win over files, a file index is read, an https index is reached, certificates are shown", () => {
  const sources = pipSources([
    "global.index-url='https://pypi.example.com/simple'",
    "global.find-links='/opt/wheels'",
    ":env:.find-links='/srv/wheels'",
    "global.cert='/etc/ssl/certs/ca.pem'",
    "global.timeout='60'",
  ].join("\n"));
  assert.deepEqual(sources.env, {
    PIP_INDEX_URL: "https://pypi.example.com/simple",
    PIP_FIND_LINKS: "/srv/wheels",
    PIP_CERT: "/etc/ssl/certs/ca.pem",
  });
  assert.deepEqual(sources.net, ["pypi.example.com:443"]);
  assert.deepEqual([...sources.read].sort(), ["/etc/ssl/certs", "/srv/wheels"]);
  assert.deepEqual(pipSources("").net, ["pypi.org:443", "files.pythonhosted.org:443"]);
  assert.deepEqual(pipSources("global.no-index='true'\nglobal.find-links='/w'").net, []);
});
