# What a party the gate guards against can put in a registry, for tests/deploy/t-trust.sh: a
# verdict artifact made by hand (not by lume-metal), as docs/verdicts.md describes the layout, so
# a test can sign any statement (openssl, with a key it holds) or none, wrap one envelope in
# several manifests, and rewrite the fallback tag's index as anyone with push access can.
#   python3 verdict-forge.py push REGISTRY REPO IMAGE_DIGEST STATEMENT.json KEY|- [ANNOTATION=V...]
#       signs STATEMENT (KEY: a PEM private key, via openssl pkeyutl; "-": a junk signature) and
#       pushes it as an artifact whose subject is IMAGE_DIGEST, listed in the fallback index;
#       prints the artifact's manifest digest
#   python3 verdict-forge.py rewrap REGISTRY REPO IMAGE_DIGEST ARTIFACT ANNOTATION=V
#       the same envelope in a new manifest (another annotation), listed too; prints its digest
#   python3 verdict-forge.py copies REGISTRY REPO IMAGE_DIGEST ARTIFACT N
#       N more manifests of the same envelope (annotations x.copy=1..N, created in the future),
#       listed after the rest with one rewrite of the index
#   python3 verdict-forge.py order REGISTRY REPO IMAGE_DIGEST ARTIFACT...
#       rewrites the fallback index to list exactly these artifacts (pushed before), in this order
# Credentials: $FORGE_AUTH (USER:SECRET), Basic; plain http (a loopback test registry). The
# signature's keyid is $FORGE_KEYID ("" when unset): an older lume-metal's was "sha256:" + hex.
import base64, hashlib, json, os, subprocess, sys, tempfile, urllib.error, urllib.request

MANIFEST = "application/vnd.oci.image.manifest.v1+json"
INDEX = "application/vnd.oci.image.index.v1+json"
EMPTY = "application/vnd.oci.empty.v1+json"
ARTIFACT = "application/vnd.lume-metal.verdict.v1+json"
ENVELOPE = "application/vnd.dsse.envelope.v1+json"
PAYLOAD = "application/vnd.in-toto+json"


def sha(b):
    return "sha256:" + hashlib.sha256(b).hexdigest()


def call(method, url, body=None, ctype=None, accept=None):
    req = urllib.request.Request(url, data=body, method=method)
    if os.environ.get("FORGE_AUTH"):
        req.add_header("Authorization", "Basic " + base64.b64encode(os.environ["FORGE_AUTH"].encode()).decode())
    if ctype:
        req.add_header("Content-Type", ctype)
    if accept:
        req.add_header("Accept", accept)
    try:
        with urllib.request.urlopen(req) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def put_blob(base, repo, data):
    d = sha(data)
    st, h, _ = call("POST", "%s/v2/%s/blobs/uploads/" % (base, repo))
    assert st == 202, ("upload", st)
    loc = h["Location"]
    if loc.startswith("/"):
        loc = base + loc
    st, _, b = call("PUT", loc + ("&" if "?" in loc else "?") + "digest=" + d, data, "application/octet-stream")
    assert st == 201, ("blob", st, b)
    return d


def get_manifest(base, repo, ref, accept):
    st, _, b = call("GET", "%s/v2/%s/manifests/%s" % (base, repo, ref), accept=accept)
    return b if st == 200 else None


def put_manifest(base, repo, ref, data, ctype):
    st, _, b = call("PUT", "%s/v2/%s/manifests/%s" % (base, repo, ref), data, ctype)
    assert st == 201, ("manifest", st, b)


def index_of(base, repo, image):
    b = get_manifest(base, repo, "sha256-" + image.split(":")[1], INDEX)
    return json.loads(b) if b else {"schemaVersion": 2, "mediaType": INDEX, "manifests": []}


def descriptor(data):
    m = json.loads(data)
    return {"mediaType": MANIFEST, "digest": sha(data), "size": len(data), "artifactType": ARTIFACT,
            "annotations": m.get("annotations", {})}


def put_index(base, repo, image, idx):
    put_manifest(base, repo, "sha256-" + image.split(":")[1], json.dumps(idx).encode(), INDEX)


def publish(base, repo, image, manifests):
    idx = index_of(base, repo, image)
    for manifest in manifests:
        data = json.dumps(manifest, separators=(",", ":")).encode()
        put_manifest(base, repo, sha(data), data, MANIFEST)
        idx["manifests"] = [m for m in idx["manifests"] if m.get("digest") != sha(data)] + [descriptor(data)]
    put_index(base, repo, image, idx)
    return sha(data)


def sign(statement, key):
    body = json.dumps(statement, separators=(",", ":")).encode()
    pae = b"DSSEv1 %d %s %d %s" % (len(PAYLOAD), PAYLOAD.encode(), len(body), body)
    if key == "-":
        sig = os.urandom(64)
    else:
        with tempfile.TemporaryDirectory() as t:
            open(t + "/pae", "wb").write(pae)
            subprocess.run(["openssl", "pkeyutl", "-sign", "-inkey", key, "-rawin", "-in", t + "/pae", "-out",
                            t + "/sig"], check=True)
            sig = open(t + "/sig", "rb").read()
    env = {"payloadType": PAYLOAD, "payload": base64.b64encode(body).decode(),
           "signatures": [{"keyid": os.environ.get("FORGE_KEYID", ""), "sig": base64.b64encode(sig).decode()}]}
    return json.dumps(env, separators=(",", ":")).encode()


def annotations(args):
    return dict(a.split("=", 1) for a in args)


def main():
    verb, reg, repo, image = sys.argv[1:5]
    base = "http://" + reg
    m = get_manifest(base, repo, image, MANIFEST)
    assert m is not None, "no image " + image
    subject = {"mediaType": MANIFEST, "digest": image, "size": len(m)}
    if verb == "push":
        env = sign(json.load(open(sys.argv[5])), sys.argv[6])
        ed, bd = put_blob(base, repo, b"{}"), put_blob(base, repo, env)
        ann = {"org.opencontainers.image.created": "2026-01-01T00:00:00Z"}
        ann.update(annotations(sys.argv[7:]))
        print(publish(base, repo, image, [{
            "schemaVersion": 2, "mediaType": MANIFEST, "artifactType": ARTIFACT,
            "config": {"mediaType": EMPTY, "digest": ed, "size": 2},
            "layers": [{"mediaType": ENVELOPE, "digest": bd, "size": len(env)}],
            "subject": subject, "annotations": ann}]))
    elif verb == "rewrap":
        art = json.loads(get_manifest(base, repo, sys.argv[5], MANIFEST))
        art.setdefault("annotations", {}).update(annotations(sys.argv[6:]))
        print(publish(base, repo, image, [art]))
    elif verb == "copies":
        art = json.loads(get_manifest(base, repo, sys.argv[5], MANIFEST))
        copies = []
        for i in range(1, int(sys.argv[6]) + 1):
            c = json.loads(json.dumps(art))
            c.setdefault("annotations", {}).update({"x.copy": str(i),
                                                   "org.opencontainers.image.created": "2026-09-01T00:00:00Z"})
            copies.append(c)
        publish(base, repo, image, copies)
    elif verb == "order":
        idx = index_of(base, repo, image)
        idx["manifests"] = [descriptor(get_manifest(base, repo, d, MANIFEST)) for d in sys.argv[5:]]
        put_index(base, repo, image, idx)
    else:
        sys.exit("verdict-forge.py: unknown verb " + verb)


main()
