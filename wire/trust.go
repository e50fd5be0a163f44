package wire

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"strconv"
)

// Handshake roles, bound into every proof so a proof made by one side can
// never be reflected back as the other side's.
const (
	RoleListener = "listener" // the side that answers Hello with Welcome
	RoleDialer   = "dialer"   // the side that sends Hello and Auth
)

// ProfileNone is the profile of a Trust without a secret: it proves nothing
// and can only handshake with another ProfileNone peer.
const ProfileNone = "none"

// ProfileShared is the default name of the shared-secret profile.
const ProfileShared = "shared"

// Trust is a shared-secret trust profile: peers prove knowledge of the
// secret by challenge–response with HMAC-SHA256 over both nonces, a role and
// a transcript; the secret never crosses the wire. A Trust is immutable and
// safe for concurrent use.
type Trust struct {
	Profile string // profile name, the first half of the security identity
	key     []byte
}

// NewTrust returns the trust profile for secret (copied). An empty profile
// name becomes ProfileShared. An empty secret gives ProfileNone whatever the
// name, so a missing secret is visible in the security identity instead of
// passing as authenticated.
func NewTrust(profile string, secret []byte) Trust {
	if len(secret) == 0 {
		return Trust{Profile: ProfileNone}
	}
	if profile == "" {
		profile = ProfileShared
	}
	return Trust{Profile: profile, key: append([]byte(nil), secret...)}
}

// Authenticates reports whether t holds a secret.
func (t Trust) Authenticates() bool { return len(t.key) > 0 }

// SecurityIdentity returns "profile:fingerprint", the fingerprint being the
// hex of the first 8 bytes of SHA-256("zlink-key-fingerprint" || secret). A
// Trust without a secret returns "none:anonymous". It never contains the
// secret and never depends on the RID.
func (t Trust) SecurityIdentity() string {
	if len(t.key) == 0 {
		return ProfileNone + ":anonymous"
	}
	h := sha256.New()
	h.Write([]byte("zlink-key-fingerprint"))
	h.Write(t.key)
	sum := h.Sum(nil)
	return t.Profile + ":" + hex.EncodeToString(sum[:8])
}

// Proof returns the proof the side in role makes: HMAC-SHA256 keyed with the
// secret over a domain tag, role, the prover's nonce (myNonce), the
// verifier's nonce (theirNonce) and each transcript string, all length
// prefixed. Use Transcript to bind the identities both sides stated.
func (t Trust) Proof(role string, myNonce, theirNonce [16]byte, transcript ...string) [32]byte {
	m := hmac.New(sha256.New, t.key)
	writeField := func(p []byte) {
		var l [4]byte
		binary.BigEndian.PutUint32(l[:], uint32(len(p)))
		m.Write(l[:])
		m.Write(p)
	}
	writeField([]byte("zlink-proof-v1"))
	writeField([]byte(role))
	writeField(myNonce[:])
	writeField(theirNonce[:])
	for _, s := range transcript {
		writeField([]byte(s))
	}
	var out [32]byte
	m.Sum(out[:0])
	return out
}

// Verify reports, in constant time, whether proof is the Proof the prover in
// role made with proverNonce as its own nonce and verifierNonce as ours.
func (t Trust) Verify(proof [32]byte, role string, proverNonce, verifierNonce [16]byte, transcript ...string) bool {
	want := t.Proof(role, proverNonce, verifierNonce, transcript...)
	return hmac.Equal(want[:], proof[:])
}

// Transcript returns the handshake facts both proofs cover: mesh, both RIDs,
// generations and security identities, the dialer's expected RID and the
// protocol versions. Both sides compute it from the Hello and the Welcome
// (the Welcome's Proof field is not part of it).
func Transcript(h *Hello, w *Welcome) []string {
	u := func(v uint64) string { return strconv.FormatUint(v, 10) }
	return []string{
		h.Mesh, h.RID, u(h.Generation), h.SecurityIdentity, h.ExpectRID, u(uint64(h.Protocol)),
		w.Mesh, w.RID, u(w.Generation), w.SecurityIdentity, u(uint64(w.Protocol)),
	}
}
