package test

import (
	"testing"

	"github.com/zlink-go/zlink/internal/zguard/tlstest"
	"github.com/zlink-go/zlink/location/locationtest"
)

// `zlink-node spot` reaches the Spots of a TLS mesh with the --tls-*
// flags, through automatic topology and through a --peer; without them it
// is refused at once, because the store shows the mesh uses TLS (and with
// them, a mesh without TLS likewise).
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
	// Without them the tool sees in the store that the mesh uses TLS, and
	// says so at once, with or without --peer.
	for _, peer := range [][]string{nil, {"--peer", obj.peerArg()}} {
		args := append(append([]string{"--mesh", "game"}, peer...), "counter", "p1", "get")
		spotErr(t, spotCall(t, loc, args...), "no_target", `mesh "game" uses TLS on its links (its nodes state tls:`+tlsMeshID)
	}
	// And a tool with TLS is told when the mesh has none.
	plain := cliStartNode(t, "--mesh", "plain", "--rid-prefix", "os", "--location", loc, "--object", "server")
	spotErr(t, spotCall(t, loc, "--mesh", "plain", "--tls-ca", ca.File, "--tls-cert", cli.CertFile, "--tls-key", cli.KeyFile, "counter", "p1", "get"),
		"no_target", `mesh "plain" does not use TLS`)
	spotOK(t, spotCall(t, loc, "--mesh", "plain", "--peer", plain.peerArg(), "counter", "p1", "add", "2"), "2")
	// The Spot and its node are untouched.
	spotOK(t, spotCall(t, loc, append(tlsFlags, "counter", "p1", "add", "1")...), "6")
}
