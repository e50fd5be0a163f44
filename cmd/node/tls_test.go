package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/zlink-go/zlink/location"
)

// A tool learns from the store, before it starts, that it cannot reach a
// mesh whose links use TLS without --tls-*, nor a mesh without TLS with
// them.
func TestTLSMismatch(t *testing.T) {
	tlsNode := location.Descriptor{SecurityIdentity: "tls:spiffe://x/m:0011223344556677"}
	plainNode := location.Descriptor{SecurityIdentity: "shared:0011223344556677"}
	for _, tc := range []struct {
		name    string
		withTLS bool
		descs   []location.Descriptor
		want    string // "" = no mismatch
	}{
		{"empty mesh", false, nil, ""},
		{"plain tool, TLS mesh", false, []location.Descriptor{tlsNode}, "uses TLS on its links (its nodes state tls:spiffe://x/m:"},
		{"TLS tool, plain mesh", true, []location.Descriptor{plainNode}, "does not use TLS on its links (its nodes state shared:"},
		{"TLS tool, TLS mesh", true, []location.Descriptor{tlsNode}, ""},
		{"plain tool, plain mesh", false, []location.Descriptor{plainNode}, ""},
		{"one node matches", false, []location.Descriptor{tlsNode, plainNode}, ""},
	} {
		got := tlsMismatch("m", tc.withTLS, tc.descs)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// The TLS flags go together.
func TestTLSFiles_AllOrNone(t *testing.T) {
	for _, tc := range []struct {
		f    tlsFiles
		want string
	}{
		{tlsFiles{}, ""},
		{tlsFiles{CA: "ca", Cert: "c", Key: "k"}, ""},
		{tlsFiles{CA: "ca"}, "missing --tls-cert, --tls-key"},
		{tlsFiles{Cert: "c", Key: "k"}, "missing --tls-ca"},
	} {
		_, err := tc.f.config()
		if (tc.want == "") != (err == nil) || err != nil && (!strings.Contains(err.Error(), tc.want) || !errors.Is(err, errUsage)) {
			t.Errorf("%+v: %v, want %q", tc.f, err, tc.want)
		}
	}
}
