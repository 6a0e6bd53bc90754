// A verdict bundle verified by an implementation that is not lume-metal's: sigstore-js
// (@sigstore/bundle, @sigstore/verify, installed by scripts/deps.sh into .tools/sigstore), the
// way a Sigstore verifier given a public key does it, as cosign's `verify-attestation --key K
// --insecure-ignore-tlog --type T IMAGE` does with sigstore-go (cosign cannot be installed here).
//   node sigstore-verify.js MODULES BUNDLE.json PUBKEY.der HINT KEYID IMAGE_DIGEST PREDICATE_TYPE
// MODULES is the node_modules folder holding @sigstore/*. The caller computes HINT and KEYID with
// tools not ours: HINT is base64 of the SHA-256 of the key's DER SubjectPublicKeyInfo (openssl),
// KEYID the key's OpenSSH fingerprint (ssh-keygen -l). Checks, each failing with its reason:
// - the bundle parses as a Sigstore bundle v0.3 (bundleFromJSON, assertBundleLatest);
// - its public key is found by its hint alone: the trust material knows the key only under HINT;
// - the DSSE signature verifies over the PAE with that key (Verifier.verify, no tlog, no TSA);
// - the signature's keyid is "" or KEYID: go-securesystemslib's envelope verifier (what
//   sigstore-go and so cosign use) skips a signature whose keyid is another, so would not verify;
// - the statement is an in-toto Statement v1 about IMAGE_DIGEST (cosign's IntotoSubjectClaimVerifier)
//   with predicateType PREDICATE_TYPE (what cosign's --type selects).
// Prints one line per check passed; exits 1 at the first that fails.
'use strict';
const fs = require('fs');
const path = require('path');

const [mods, bundlePath, derPath, hint, keyid, digest, predicateType] = process.argv.slice(2);
const need = (m) => require(path.join(mods, m));
const { bundleFromJSON, assertBundleLatest, BUNDLE_V03_MEDIA_TYPE } = need('@sigstore/bundle');
const { Verifier, toSignedEntity, toTrustMaterial } = need('@sigstore/verify');

function fail(what, e) {
  console.log(`FAIL ${what}: ${e && e.message ? e.message : e}`);
  process.exit(1);
}

let json, bundle;
try {
  json = JSON.parse(fs.readFileSync(bundlePath, 'utf8'));
  bundle = bundleFromJSON(json);
  assertBundleLatest(bundle);
  if (bundle.mediaType !== BUNDLE_V03_MEDIA_TYPE) throw new Error(`mediaType ${bundle.mediaType}`);
} catch (e) {
  fail('a Sigstore bundle v0.3', e);
}
console.log(`ok bundle ${bundle.mediaType}, content ${bundle.content.$case}`);

const root = { mediaType: '', certificateAuthorities: [], tlogs: [], ctlogs: [], timestampAuthorities: [] };
const keys = { [hint]: { rawBytes: fs.readFileSync(derPath), keyDetails: 0 } };
try {
  const verifier = new Verifier(toTrustMaterial(root, keys), { tlogThreshold: 0, ctlogThreshold: 0, timestampThreshold: 0 });
  verifier.verify(toSignedEntity(bundle));
} catch (e) {
  fail(`the signature, with the key found by hint ${hint}`, e);
}
console.log(`ok signature verified with the key of hint ${hint}`);

const sigs = json.dsseEnvelope.signatures;
if (sigs.length !== 1) fail('one signature', `${sigs.length}`);
if (sigs[0].keyid !== '' && sigs[0].keyid !== keyid)
  fail('the keyid', `"${sigs[0].keyid}" is neither empty nor the key's fingerprint ${keyid}: go-securesystemslib skips it`);
console.log(`ok keyid "${sigs[0].keyid}"`);

let st;
try {
  st = JSON.parse(Buffer.from(json.dsseEnvelope.payload, 'base64').toString('utf8'));
} catch (e) {
  fail('the statement', e);
}
if (st._type !== 'https://in-toto.io/Statement/v1') fail('the statement', `_type ${st._type}`);
if (!st.subject.some((s) => s.digest && `sha256:${s.digest.sha256}` === digest)) fail('the subject', `not ${digest}`);
if (st.predicateType !== predicateType) fail('the predicateType', st.predicateType);
console.log(`ok statement about ${digest}, predicateType ${st.predicateType}`);
