package test

import (
	"testing"

	"github.com/zlink-go/zlink/internal/zguard/tlstest"
	"github.com/zlink-go/zlink/location/locationtest"
	"github.com/zlink-go/zlink/routemesh"
)

// `zlink-node spot` reaches the Spots of a TLS mesh with the --tls-*
// flags, through automatic topology and through a --peer; through a --peer
// without them it is refused at once, naming the TLS refusal.
func TestCLI_SpotTLS(t *testing.T) {
	redis := locationtest.StartRedis(t)
	loc := redis.URL()
	ca := tlstest.NewCA(t, "mesh CA")
	srv, cli := ca.Issue(t, tlsMeshID), ca.Issue(t, tlsMeshID)
	obj := cliStartNode(t, "--mesh", "game", "--rid-prefix", "os", "--location", loc, "--object", "server",
		"--tls-ca", ca.File, "--tls-cert", srv.CertFile, "--tls-key", srv.KeyFile)
	tlsFlags := []string{"--mesh", "game", "--tls-ca", ca.File, "--tls-cert", cli.CertFile, "--tls-key", cli.KeyFile}

	if rid := spotOK(t, spotCall(t, loc, append(tlsFlags, "counter", "p1", "add", "5")...), "5"); rid != obj.rid {
		t.Fatalf("answered by %s, want %s", rid, obj.rid)
	}
	spotOK(t, spotCall(t, loc, append(tlsFlags, "--peer", obj.peerArg(), "counter", "p1", "get")...), "5")
	spotErr(t, spotCall(t, loc, "--mesh", "game", "--peer", obj.peerArg(), "counter", "p1", "get"),
		"no_target", routemesh.ErrTLSUnexpected.Error())
	// The Spot and its node are untouched.
	spotOK(t, spotCall(t, loc, append(tlsFlags, "counter", "p1", "add", "1")...), "6")
}
