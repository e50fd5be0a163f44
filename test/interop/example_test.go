package interop

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/zlink-go/zlink/wire"
)

// The example exchange of docs/wire-protocol.md (§12), built here with
// package wire: the document's hex must be these bytes, and peer.py must
// decode them and verify their proofs. ZLINK_UPDATE_DOCS=1 rewrites the
// document's block instead of comparing.

const (
	exampleSecret   = "example-secret"
	exampleBegin    = "<!-- wire-example:begin (test/interop/example_test.go) -->"
	exampleEnd      = "<!-- wire-example:end -->"
	exampleBytesRow = 16
)

// spotString is a Spot payload string: uvarint length, bytes.
func spotString(s string) []byte { return append([]byte{byte(len(s))}, s...) }

// exampleFrames returns the example's frames in order, by name.
func exampleFrames(t *testing.T) (names []string, frames map[string][]byte) {
	t.Helper()
	trust := wire.NewTrust("shared", []byte(exampleSecret))
	var dn, ln [16]byte
	for i := range dn {
		dn[i], ln[i] = byte(i), byte(0x10+i)
	}
	hello := &wire.Hello{Identity: wire.Identity{Mesh: "game", RID: "py", Generation: 0x0102030405060708, Revision: 1,
		ObjectRole: 1, SecurityIdentity: trust.SecurityIdentity(), Protocol: 1,
		Capabilities: []string{"batch-v1"}, RecvLimit: 1 << 20}, Nonce: dn, ExpectRID: "node"}
	welcome := &wire.Welcome{Identity: wire.Identity{Mesh: "game", RID: "node", Generation: 0x1112131415161718, Revision: 3,
		ObjectRole: 3, Servers: map[string]uint16{"echo": 100}, SecurityIdentity: trust.SecurityIdentity(),
		Endpoint: "tcp://10.0.0.2:7100", Protocol: 1, Capabilities: []string{"batch-v1", "trace-v1"},
		RecvLimit: 64<<20 + 64<<10}, Nonce: ln}
	tr := wire.Transcript(hello, welcome)
	welcome.Proof = trust.Proof(wire.RoleListener, ln, dn, tr...)
	auth := &wire.Auth{Proof: trust.Proof(wire.RoleDialer, dn, ln, tr...)}
	ready := []wire.Envelope{{Kind: wire.KindHeartbeat, Generation: welcome.Generation, Revision: 3,
		Servers: map[string]uint16{"echo": 100}, Headroom: map[string]uint32{"echo": 64}}}
	body, err := add.EncodeRequest(2)
	if err != nil {
		t.Fatal(err)
	}
	// Spot request: version 1, flags 1 (CallVia), hops 0, kind, id,
	// packet, no chain, then the body.
	spotReq := append([]byte{1, 1, 0}, spotString("counter")...)
	spotReq = append(spotReq, spotString("c1")...)
	spotReq = append(spotReq, spotString("add")...)
	spotReq = append(append(spotReq, 0), body...)
	out, err := add.EncodeReply(2)
	if err != nil {
		t.Fatal(err)
	}
	// Spot reply: status 0 (ok), owner "" (the replier), epoch 1, body.
	spotRep := append([]byte{0, 0, 1}, out...)
	list := []struct {
		name string
		f    wire.Frame
	}{
		{"hello", wire.Frame{Type: wire.FrameHello, Hello: hello}},
		{"welcome", wire.Frame{Type: wire.FrameWelcome, Welcome: welcome}},
		{"auth", wire.Frame{Type: wire.FrameAuth, Auth: auth}},
		{"ready", wire.Frame{Type: wire.FrameBatch, Batch: ready}},
		{"spot_request", wire.Frame{Type: wire.FrameBatch, Batch: []wire.Envelope{{Kind: wire.KindRequest, Corr: 1,
			Packet: "zlink.spot", TimeoutMs: 5000, Payload: spotReq}}}},
		{"spot_reply", wire.Frame{Type: wire.FrameBatch, Batch: []wire.Envelope{{Kind: wire.KindReply, Corr: 1,
			Payload: spotRep}}}},
	}
	frames = map[string][]byte{}
	for _, x := range list {
		b, err := wire.AppendFrame(nil, &x.f)
		if err != nil {
			t.Fatalf("%s: %v", x.name, err)
		}
		names = append(names, x.name)
		frames[x.name] = b
	}
	return names, frames
}

// exampleBlock renders the frames as the document shows them.
func exampleBlock(names []string, frames map[string][]byte) string {
	var b strings.Builder
	b.WriteString(exampleBegin + "\n```\n")
	for _, n := range names {
		f := frames[n]
		fmt.Fprintf(&b, "%s (%d bytes):\n", n, len(f))
		for i := 0; i < len(f); i += exampleBytesRow {
			row := f[i:min(i+exampleBytesRow, len(f))]
			parts := make([]string, len(row))
			for j, x := range row {
				parts[j] = fmt.Sprintf("%02x", x)
			}
			b.WriteString("  " + strings.Join(parts, " ") + "\n")
		}
	}
	b.WriteString("```\n" + exampleEnd)
	return b.String()
}

func docPath(t *testing.T) string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("no caller")
	}
	return filepath.Join(filepath.Dir(file), "..", "..", "docs", "wire-protocol.md")
}

// The document's example exchange is what package wire encodes, and a
// peer written from the document decodes it and verifies its proofs.
func TestInterop_DocumentExample(t *testing.T) {
	names, frames := exampleFrames(t)
	want := exampleBlock(names, frames)
	path := docPath(t)
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	i, j := bytes.Index(doc, []byte(exampleBegin)), bytes.Index(doc, []byte(exampleEnd))
	if i < 0 || j < i {
		t.Fatalf("%s has no example block (%q … %q)", path, exampleBegin, exampleEnd)
	}
	got := string(doc[i : j+len(exampleEnd)])
	if os.Getenv("ZLINK_UPDATE_DOCS") != "" {
		doc = append(append(append([]byte{}, doc[:i]...), want...), doc[j+len(exampleEnd):]...)
		if err := os.WriteFile(path, doc, 0o644); err != nil {
			t.Fatal(err)
		}
		got = want
	}
	if got != want {
		t.Fatalf("the example in %s is not what package wire encodes; run with ZLINK_UPDATE_DOCS=1 to rewrite it:\n%s", path, want)
	}
	hexes := map[string]string{}
	for n, f := range frames {
		hexes[n] = hex.EncodeToString(f)
	}
	p := startPeer(t, "hex", map[string]any{"example": map[string]any{"frames": hexes, "secret": exampleSecret,
		"spot": []string{"spot_request", "spot_reply"}}})
	expectLines(t, p.wait(time.Minute), "ok example handshake verifies", "ok example spot frames decode")
}
