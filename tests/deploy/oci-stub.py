# A STUB OCI registry for t-verdicts.sh: what Debian's docker-registry (distribution 2.8) lacks,
# the referrers API of the OCI distribution spec 1.1, and hostile answers. Not a registry: it
# keeps everything in memory, checks no blob a manifest names, and has no auth.
#   python3 oci-stub.py ADDR PORT PIDFILE LOGFILE [ADDR2]
# Blobs (HEAD, GET, POST uploads/ then PUT ?digest=), manifests (HEAD, GET, PUT by tag or
# digest; a manifest with a "subject" is answered with OCI-Subject and listed by
# GET /v2/REPO/referrers/DIGEST[?artifactType=T], an image index). Misbehaving repositories, by
# name, for blob GETs: org/tamper answers other bytes than the digest, org/huge 2 MiB, org/loop
# redirects to itself; org/deepidx answers referrers nested 5000 levels. With ADDR2 the stub
# also listens there (same PORT, same store), as a blob storage host: GET /storage/DIGEST
# answers the blob (?tamper: other bytes), and org/moved redirects its blob GETs (307) to it,
# org/away to it with ?tamper, org/plain to plain http at 192.0.2.1 (TEST-NET-1: no such host).
# The referrers API's pages (a Link with rel="next", as distribution 1.1 has it): org/paged lists
# two descriptors of another artifactType before what was pushed, one a page, the first page's
# Link an absolute URL of this registry and the others paths; org/endless answers a next page
# always; org/linkloop names the page it answered; org/linkaway names a page on ADDR2.
# DELETE of a manifest by tag (OCI distribution 1.1) removes the tag: 202. org/race plays a
# re-tag racing every push: a manifest PUT under a tag that named another manifest is answered
# 201, and the tag is pointed back at that other manifest at once.
# The log has one line per request: METHOD PATH (and @ADDR2 when that address was asked).
import hashlib, json, os, sys, threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

ADDR, PORT, PIDFILE, LOGFILE = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
ADDR2 = sys.argv[5] if len(sys.argv) > 5 else None
blobs, manifests, tags, referrers = {}, {}, {}, {}
INDEX = "application/vnd.oci.image.index.v1+json"


def sha(b):
    return "sha256:" + hashlib.sha256(b).hexdigest()


class Stub(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def answer(self, code, headers=(), body=b""):
        self.send_response(code)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def route(self):
        here = self.server.server_address[0]
        with open(LOGFILE, "a") as f:
            f.write("%s %s%s\n" % (self.command, self.path, "" if here == ADDR else " @" + here))
        u = urlparse(self.path)
        p = u.path
        if p.startswith("/storage/") and p[9:] in blobs:
            return self.answer(200, body=blobs[p[9:]] + (b" " if "tamper" in u.query else b""))
        if not p.startswith("/v2/"):
            return self.answer(404)
        for kind in ("/blobs/uploads/", "/blobs/", "/manifests/", "/referrers/"):
            if kind in p:
                repo, ref = p[4:].split(kind, 1)
                return getattr(self, kind.strip("/").replace("blobs/uploads", "upload"))(repo, ref, parse_qs(u.query))
        return self.answer(404)

    do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = route

    def upload(self, repo, ref, q):
        if self.command == "POST":
            return self.answer(202, [("Location", "/v2/%s/blobs/uploads/u1?_state=x" % repo)])
        data = self.body()
        d = q.get("digest", [""])[0]
        if sha(data) != d:
            return self.answer(400)
        blobs[d] = data
        return self.answer(201, [("Docker-Content-Digest", d)])

    def blobs(self, repo, d, q):
        if d not in blobs:
            return self.answer(404)
        if self.command == "GET" and repo == "org/tamper":
            return self.answer(200, body=blobs[d] + b" ")
        if self.command == "GET" and repo == "org/huge":
            return self.answer(200, body=b"{" * (2 << 20))
        if self.command == "GET" and repo == "org/loop":
            return self.answer(302, [("Location", "http://%s:%d%s" % (ADDR, PORT, self.path))])
        away = {"org/moved": (ADDR2, ""), "org/away": (ADDR2, "?tamper"), "org/plain": ("192.0.2.1", "")}
        if self.command == "GET" and repo in away:
            host, q = away[repo]
            return self.answer(307, [("Location", "http://%s:%d/storage/%s%s" % (host, PORT, d, q))])
        return self.answer(200, [("Docker-Content-Digest", d)], blobs[d])

    def manifests(self, repo, ref, q):
        if self.command == "DELETE":
            if ref.startswith("sha256:"):
                return self.answer(405)
            return self.answer(202 if tags.pop((repo, ref), None) else 404)
        if self.command == "PUT":
            data = self.body()
            d = sha(data)
            if ref.startswith("sha256:") and ref != d:
                return self.answer(400)
            m = json.loads(data)
            manifests[(repo, d)] = (data, self.headers.get("Content-Type", ""))
            if not ref.startswith("sha256:"):
                before = tags.get((repo, ref))
                tags[(repo, ref)] = before if repo == "org/race" and before not in (None, d) else d
            h = [("Docker-Content-Digest", d)]
            if "subject" in m:
                desc = {"mediaType": m["mediaType"], "digest": d, "size": len(data)}
                for k in ("artifactType", "annotations"):
                    if k in m:
                        desc[k] = m[k]
                referrers.setdefault((repo, m["subject"]["digest"]), []).append(desc)
                h.append(("OCI-Subject", m["subject"]["digest"]))
            return self.answer(201, h)
        d = ref if ref.startswith("sha256:") else tags.get((repo, ref))
        if (repo, d) not in manifests:
            return self.answer(404)
        data, ct = manifests[(repo, d)]
        return self.answer(200, [("Docker-Content-Digest", d), ("Content-Type", ct)], data)

    def referrers(self, repo, d, q):
        if repo == "org/deepidx":
            return self.answer(200, [("Content-Type", INDEX)], b"[" * 5000 + b"]" * 5000)
        want = q.get("artifactType", [None])[0]
        ms = [r for r in referrers.get((repo, d), []) if want is None or r.get("artifactType") == want]
        h = [("Content-Type", INDEX)] + ([("OCI-Filters-Applied", "artifactType")] if want else [])
        page, nxt = int(q.get("page", ["0"])[0]), None
        junk = lambda i: {"mediaType": "application/vnd.oci.image.manifest.v1+json", "size": 2,
                          "digest": sha(b"junk %d" % i), "artifactType": "application/example"}
        if repo == "org/paged":
            ms = [junk(1), junk(2)] + ms
            nxt = page + 1 if page + 1 < len(ms) else None
            ms = ms[page:page + 1]
        elif repo == "org/endless":
            ms, nxt = [junk(page)], page + 1
        elif repo in ("org/linkloop", "org/linkaway"):
            nxt = 0
        if nxt is not None:
            link = "/v2/%s/referrers/%s?page=%d" % (repo, d, nxt)
            if (repo == "org/paged" and page == 0) or repo == "org/linkaway":
                link = "http://%s:%d%s" % (ADDR if repo == "org/paged" else ADDR2, PORT, link)
            h.append(("Link", '<%s>; rel="next"' % link))
        return self.answer(200, h, json.dumps({"schemaVersion": 2, "mediaType": INDEX, "manifests": ms}).encode())


srv = ThreadingHTTPServer((ADDR, PORT), Stub)
srv.daemon_threads = True
if ADDR2:
    srv2 = ThreadingHTTPServer((ADDR2, PORT), Stub)
    srv2.daemon_threads = True
    threading.Thread(target=srv2.serve_forever, daemon=True).start()
with open(PIDFILE + ".tmp", "w") as f:
    f.write("%d\n" % os.getpid())
os.rename(PIDFILE + ".tmp", PIDFILE)
srv.serve_forever()
