package wire

import (
	"strings"
	"testing"
)

func TestTrust_ProofVerify(t *testing.T) {
	secret := []byte("correct horse battery staple")
	a := NewTrust("shared", secret)
	b := NewTrust("shared", []byte("correct horse battery staple"))
	other := NewTrust("shared", []byte("wrong"))
	none := NewTrust("", nil)
	dialerNonce := [16]byte{1, 2, 3}
	listenerNonce := [16]byte{9, 8, 7}
	tr := []string{"game-mesh", "a", "b"}

	// Listener proves over the dialer's nonce; dialer verifies.
	p := a.Proof(RoleListener, listenerNonce, dialerNonce, tr...)
	if !b.Verify(p, RoleListener, listenerNonce, dialerNonce, tr...) {
		t.Fatal("same secret does not verify")
	}
	cases := map[string]bool{
		"different secret": other.Verify(p, RoleListener, listenerNonce, dialerNonce, tr...),
		"no secret":        none.Verify(p, RoleListener, listenerNonce, dialerNonce, tr...),
		"swapped nonces":   b.Verify(p, RoleListener, dialerNonce, listenerNonce, tr...),
		"swapped role":     b.Verify(p, RoleDialer, listenerNonce, dialerNonce, tr...),
		"other transcript": b.Verify(p, RoleListener, listenerNonce, dialerNonce, "game-mesh", "a", "c"),
		"split transcript": b.Verify(p, RoleListener, listenerNonce, dialerNonce, "game-mesha", "b"),
		"no transcript":    b.Verify(p, RoleListener, listenerNonce, dialerNonce),
		"other nonce":      b.Verify(p, RoleListener, listenerNonce, [16]byte{1, 2, 4}, tr...),
	}
	for name, ok := range cases {
		if ok {
			t.Errorf("%s: proof verified", name)
		}
	}
	// A reflected proof (dialer's proof replayed as the listener's) fails.
	dp := a.Proof(RoleDialer, dialerNonce, listenerNonce, tr...)
	if b.Verify(dp, RoleListener, listenerNonce, dialerNonce, tr...) || !b.Verify(dp, RoleDialer, dialerNonce, listenerNonce, tr...) {
		t.Fatal("dialer proof misbehaves")
	}
}

func TestTrust_SecurityIdentity(t *testing.T) {
	secret := []byte("0123456789abcdef-very-secret")
	tr := NewTrust("prod", secret)
	id := tr.SecurityIdentity()
	if id != NewTrust("prod", append([]byte(nil), secret...)).SecurityIdentity() {
		t.Fatal("security identity not stable")
	}
	if !strings.HasPrefix(id, "prod:") || len(id) != len("prod:")+16 {
		t.Fatalf("security identity %q", id)
	}
	if strings.Contains(id, string(secret)) || strings.Contains(id, "secret") {
		t.Fatalf("security identity %q leaks the secret", id)
	}
	if id == NewTrust("prod", []byte("other")).SecurityIdentity() {
		t.Fatal("different secrets share a fingerprint")
	}
	secret[0] = 'X' // NewTrust copied the secret
	if tr.SecurityIdentity() != id {
		t.Fatal("Trust aliases the caller's secret")
	}
	if got := NewTrust("", []byte("k")).Profile; got != ProfileShared {
		t.Fatalf("default profile %q", got)
	}
	none := NewTrust("prod", nil)
	if none.Authenticates() || none.SecurityIdentity() != "none:anonymous" || !tr.Authenticates() {
		t.Fatalf("no-secret trust: %q", none.SecurityIdentity())
	}
}

func TestTrust_KnownFingerprint(t *testing.T) {
	// printf 'zlink-key-fingerprints3cret' | sha256sum | cut -c1-16
	if got := NewTrust("shared", []byte("s3cret")).SecurityIdentity(); got != "shared:"+knownFingerprint {
		t.Fatalf("fingerprint %q", got)
	}
}

func TestTranscript_BindsBothIdentities(t *testing.T) {
	h := &Hello{Identity: sampleIdentity("a")}
	w := &Welcome{Identity: sampleIdentity("b")}
	base := strings.Join(Transcript(h, w), "\x00")
	w.Generation++
	if strings.Join(Transcript(h, w), "\x00") == base {
		t.Fatal("transcript ignores the listener generation")
	}
	h.ExpectRID = "zzz"
	w.Generation--
	if strings.Join(Transcript(h, w), "\x00") == base {
		t.Fatal("transcript ignores ExpectRID")
	}
}

const knownFingerprint = "f21f272ef2117aff"
