# A STUB registry for test_registry: plays ghcr.io's Bearer challenge on loopback, so the token
# flow of registry_manifest_digest can be tested without the network. Not a registry: it knows one
# digest and a few misbehaving repositories, by name.
#   python3 registry-stub.py ADDR PORT PIDFILE LOGFILE
# Credentials u / p4ss-stub give the token "tok-123"; the log records, per request, the method,
# path and the Authorization scheme (never its value).
import base64, json, os, sys, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

ADDR, PORT, PIDFILE, LOGFILE = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
DIGEST = "sha256:" + "ab" * 32
TOKEN = "tok-123"
BASIC = "Basic " + base64.b64encode(b"u:p4ss-stub").decode()
ME = "http://%s:%d" % (ADDR, PORT)


class Stub(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def note(self):
        auth = self.headers.get("Authorization", "")
        with open(LOGFILE, "a") as f:
            f.write("%s %s %s accept=%s\n" % (self.command, self.path, auth.split(" ")[0] or "-",
                                              "oci" if "application/vnd.oci.image.manifest.v1+json" in self.headers.get("Accept", "") else "-"))

    def answer(self, code, headers=(), body=b""):
        self.send_response(code)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_GET(self):
        self.note()
        u = urlparse(self.path)
        if not u.path.startswith("/token"):
            return self.answer(404)
        q = parse_qs(u.query)
        repo = q.get("scope", [""])[0].split(":")[1] if ":" in q.get("scope", [""])[0] else ""
        if q.get("service") != ["stub-registry"] or q.get("scope") != ["repository:%s:pull" % repo]:
            return self.answer(400, body=b'{"errors":[{"message":"bad service or scope"}]}')
        if self.headers.get("Authorization") != BASIC:
            return self.answer(401, [("WWW-Authenticate", 'Basic realm="stub"')])
        if repo == "org/bigtoken":
            return self.answer(200, body=b'{"token":"' + b"x" * 100000 + b'"}')
        if repo == "org/notoken":
            return self.answer(200, body=b'{"expires_in":300}')
        if repo == "org/access":
            return self.answer(200, body=json.dumps({"access_token": TOKEN}).encode())
        if repo == "org/wrongtoken":
            return self.answer(200, body=json.dumps({"token": "not-the-token"}).encode())
        return self.answer(200, body=json.dumps({"token": TOKEN, "expires_in": 300}).encode())

    def do_HEAD(self):
        self.note()
        p = self.path
        if not p.startswith("/v2/") or "/manifests/" not in p:
            return self.answer(404)
        repo, tag = p[4:].split("/manifests/", 1)
        if repo == "org/slow":
            time.sleep(5)
            return self.answer(200, [("Docker-Content-Digest", DIGEST)])
        if repo == "org/redirect":
            return self.answer(307, [("Location", ME + "/v2/org/img/manifests/" + tag)])
        if repo == "org/nochallenge":
            return self.answer(401)
        realm = "http://example.com/token" if repo == "org/httprealm" else ME + "/token"
        if self.headers.get("Authorization") != "Bearer " + TOKEN:
            return self.answer(401, [("WWW-Authenticate", 'Bearer realm="%s",service="stub-registry",scope="repository:%s:pull"'
                                      % (realm, repo))])
        if tag != "latest":
            return self.answer(404)
        if repo == "org/baddigest":
            return self.answer(200, [("Docker-Content-Digest", "sha256:" + "AB" * 32)])
        if repo == "org/nodigest":
            return self.answer(200)
        if repo == "org/bigheaders":
            return self.answer(200, [("X-Filler-%d" % i, "y" * 1000) for i in range(80)] + [("Docker-Content-Digest", DIGEST)])
        return self.answer(200, [("Docker-Content-Digest", DIGEST), ("Content-Type", "application/vnd.oci.image.manifest.v1+json")])


srv = ThreadingHTTPServer((ADDR, PORT), Stub)
srv.daemon_threads = True
with open(PIDFILE + ".tmp", "w") as f:
    f.write("%d\n" % os.getpid())
os.rename(PIDFILE + ".tmp", PIDFILE)
srv.serve_forever()
