package main

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/routemesh"
)

// oneUsageLine fails unless err is a usage error of one line.
func oneUsageLine(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, errUsage) {
		t.Fatalf("%s: %v is not a usage error (exit 2)", what, err)
	}
	if strings.ContainsAny(err.Error(), "\n\r") {
		t.Fatalf("%s: a message of several lines: %q", what, err)
	}
}

// FuzzParseConfig parses arbitrary YAML as a config file: it never panics;
// a refusal is one usage line (exit 2); an accepted config has every
// number within its range, and applying it to a node's configuration and
// validating that (as Start does) refuses with ErrConfig, or accepts. The
// seeds run in plain go test; run longer with
// go test -run '^$' -fuzz '^FuzzParseConfig$' -fuzztime 60s ./cmd/node/
func FuzzParseConfig(f *testing.F) {
	for _, s := range []string{
		"",
		"meshes:\n  - name: game\n    servers: [{channel: match, weight: 5}]\n",
		"admin: 127.0.0.1:0\nlog_level: info\nmeshes:\n  - name: a\n    rid: a1\n    peers: [\"tcp://127.0.0.1:7001#b\"]\n    clients: [c]\n",
		"meshes:\n  - name: a\n    handler_concurrency: 65536\n    liveness: {interval: 1ms, max_gap: 1048576, last_heard: 1h}\n",
		"meshes:\n  - name: a\n    handler_concurrency: 65537\n",
		"meshes:\n  - name: a\n    handler_concurrency: 1000000000000000000000\n",
		"meshes:\n  - name: a\n    socket: {send_hwm: -1, mailbox_bytes: 1073741824, send_timeout: 10m}\n",
		"meshes:\n  - name: a\n    socket: {mailbox_bytes: 1073741825}\n",
		"meshes:\n  - name: a\n    drain_timeout: 24h\n    shutdown_timeout: 24h0m0.000000001s\n",
		"meshes:\n  - name: 'g{x}'\n",
		"meshes:\n  - name: a\n    servers: [{channel: c, weight: 10001, concurrency: 65537}]\n",
		"meshes:\n  - &m {name: a}\n  - *m\n",
		"meshes: [{name: a, tls: {ca: /dev/zero, cert: x, key: y}}]\n",
		"meshes:\n  - name: a\n    colour: blue\n",
		"meshes: {name: a}\n",
		"- - - -\n",
		"meshes:\n  - name: a\n    drain_timeout: 5\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if len(raw) > maxConfigFile {
			return
		}
		cfg, err := parseConfig(raw, "f.yaml")
		if err != nil {
			oneUsageLine(t, "parse", err)
			return
		}
		for i := range cfg.Meshes {
			m := &cfg.Meshes[i]
			if err := m.checkNumbers(); err != nil {
				t.Fatalf("accepted mesh %d with a number out of range: %v", i, err)
			}
			if m.SecretFile != "" || m.TLS != nil {
				continue // reads files: not a fuzzing matter
			}
			b := routemesh.NewMeshBuilder(m.Name)
			if err := m.apply(b, newBuiltins(), nil, nil); err != nil {
				oneUsageLine(t, "apply", err)
				continue
			}
			top := routemesh.Topology{Meshes: []*routemesh.Config{b.Config()}, HasLocationStore: true}
			if err := top.Validate(); err != nil && (!errors.Is(err, routemesh.ErrConfig) || strings.Contains(err.Error(), "\n")) {
				t.Fatalf("validate: %v, want one ErrConfig line", err)
			}
		}
	})
}

// FuzzFlagValues feeds arbitrary flag values to the CLI's parsers (--server,
// --peer, --object, --mesh, spot KIND and ID) and names to the line
// printer: a parser never panics and refuses with one usage line; a
// printed name holds no space, line break or control character and reads
// back as the name. The seeds run in plain go test; run longer with
// go test -run '^$' -fuzz '^FuzzFlagValues$' -fuzztime 60s ./cmd/node/
func FuzzFlagValues(f *testing.F) {
	long := strings.Repeat("n", location.MaxNameLen+1)
	for _, s := range [][5]string{
		{"match", "tcp://127.0.0.1:7001#b", "server", "game", "player-1"},
		{"match=10000", "127.0.0.1:7001", "client", "g{x}", ""},
		{"match=-1", "#x", "none", long, long},
		{"=5", "http://x:1", "sever", "a:b", "x"},
		{"m=99999999999999999999", "tcp://[::1]:0", "", "m\x1b[31m", "a\nb"},
		{"m=1e3", "tcp://127.0.0.1:99999#" + long, "SERVER", "", "\xff"},
	} {
		f.Add(s[0], s[1], s[2], s[3], s[4])
	}
	f.Fuzz(func(t *testing.T, server, peer, object, mesh, id string) {
		if _, err := parseServer(server); err != nil {
			oneUsageLine(t, "--server", err)
		}
		if _, err := parsePeer(peer); err != nil {
			oneUsageLine(t, "--peer", err)
		}
		if _, err := parseObjectRole(object); err != nil {
			oneUsageLine(t, "--object", err)
		}
		if err := checkSpotName(mesh, id); err != nil {
			oneUsageLine(t, "spot KIND ID", err)
		}
		if err := location.CheckMeshName(mesh, true); err != nil && !errors.Is(err, location.ErrInvalid) {
			t.Fatalf("--mesh %q: %v", mesh, err)
		}
		for _, name := range []string{server, peer, object, mesh, id} {
			v := lineValue(name)
			if strings.ContainsFunc(v, func(r rune) bool { return unicode.IsControl(r) || unicode.IsSpace(r) }) {
				t.Fatalf("lineValue(%q) = %q", name, v)
			}
			back := v
			if strings.HasPrefix(v, `"`) {
				var err error
				if back, err = strconv.Unquote(v); err != nil {
					t.Fatalf("lineValue(%q) = %s does not unquote: %v", name, v, err)
				}
			}
			if back != name {
				t.Fatalf("lineValue(%q) = %s reads back as %q", name, v, back)
			}
		}
		if msg := oneLine(server + "\n" + mesh); strings.ContainsFunc(msg, unicode.IsControl) {
			t.Fatalf("oneLine left a control character: %q", msg)
		}
	})
}
