package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	zlink "github.com/zlink-go/zlink"
)

func TestParseServer(t *testing.T) {
	cases := []struct {
		in      string
		channel string
		weight  int // -1: not set
		bad     bool
	}{
		{"match", "match", -1, false},
		{"match=300", "match", 300, false},
		{"match=0", "match", 0, false},
		{"match=x", "", 0, true},
		{"=5", "", 0, true},
	}
	for _, tc := range cases {
		sc, err := parseServer(tc.in)
		if tc.bad {
			if !errors.Is(err, errUsage) {
				t.Fatalf("%q: err %v, want usage error", tc.in, err)
			}
			continue
		}
		if err != nil || sc.Channel != tc.channel {
			t.Fatalf("%q: %+v %v", tc.in, sc, err)
		}
		if (sc.Weight == nil) != (tc.weight == -1) || (sc.Weight != nil && *sc.Weight != tc.weight) {
			t.Fatalf("%q: weight %v, want %d", tc.in, sc.Weight, tc.weight)
		}
	}
}

func TestParsePeer(t *testing.T) {
	pc, err := parsePeer("tcp://127.0.0.1:7001#game-1")
	if err != nil || pc.Endpoint != "tcp://127.0.0.1:7001" || pc.ExpectRID != "game-1" {
		t.Fatalf("%+v %v", pc, err)
	}
	pc, err = parsePeer("tcp://127.0.0.1:7001")
	if err != nil || pc.ExpectRID != "" {
		t.Fatalf("%+v %v", pc, err)
	}
	if _, err := parsePeer("#x"); !errors.Is(err, errUsage) {
		t.Fatalf("empty endpoint: %v", err)
	}
}

func TestParseConfig_UnknownKeysFail(t *testing.T) {
	if _, err := parseConfig([]byte("meshes:\n  - name: a\n    colour: blue\n"), "x"); !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "colour") {
		t.Fatalf("err %v", err)
	}
	cfg, err := parseConfig([]byte("meshes:\n  - name: a\n    drain_timeout: 3s\n    servers: [{channel: m, weight: 5}]\n"), "x")
	if err != nil || len(cfg.Meshes) != 1 || cfg.Meshes[0].DrainTimeout.String() != "3s" || *cfg.Meshes[0].Servers[0].Weight != 5 {
		t.Fatalf("%+v %v", cfg, err)
	}
	if cfg, err := parseConfig(nil, "empty"); err != nil || len(cfg.Meshes) != 0 {
		t.Fatalf("empty file: %+v %v", cfg, err)
	}
}

func TestResolve_FlagsAndFile(t *testing.T) {
	f := &runFlags{mesh: "default", listen: "tcp://127.0.0.1:0", admin: "127.0.0.1:0", location: "none", servers: []string{"m=7"}}
	cfg, err := f.resolve()
	if err != nil || len(cfg.Meshes) != 1 || cfg.Meshes[0].Name != "default" || *cfg.Meshes[0].Servers[0].Weight != 7 {
		t.Fatalf("%+v %v", cfg, err)
	}
}

func TestEchoReply_RoundTrip(t *testing.T) {
	rid, data, ok := parseEchoReply(echoReply("node-1", []byte("a b=c")))
	if !ok || rid != "node-1" || data != "a b=c" {
		t.Fatalf("%q %q %v", rid, data, ok)
	}
	if _, _, ok := parseEchoReply([]byte("garbage")); ok {
		t.Fatal("parsed garbage")
	}
}

func TestExitCodes(t *testing.T) {
	var out, errb bytes.Buffer
	if code := execute([]string{"run", "--server", "m=99999"}, &out, &errb); code != exitConfig {
		t.Fatalf("code %d, stderr %q", code, errb.String())
	}
	if !strings.Contains(errb.String(), "channel=m") || strings.Count(errb.String(), "\n") != 1 {
		t.Fatalf("stderr %q", errb.String())
	}
	if exitCode(zlink.ErrConfig) != exitConfig || exitCode(errSilent) != exitFailure {
		t.Fatal("exit code mapping")
	}
}
