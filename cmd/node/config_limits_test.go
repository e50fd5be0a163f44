package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every numeric YAML setting outside its range is refused at parse time,
// in one line naming the setting and the range.
func TestParseConfig_NumbersOutsideTheirRange(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"handler_concurrency: 1000000000", "handler_concurrency 1000000000 out of range 1..65536"},
		{"handler_concurrency: -1", "handler_concurrency -1 out of range 1..65536"},
		{"drain_timeout: 500us", "drain_timeout 500µs out of range 1ms..24h0m0s"},
		{"shutdown_timeout: 48h", "shutdown_timeout 48h0m0s out of range"},
		{"liveness: {interval: 2m}", "liveness.interval 2m0s out of range 1ms..1m0s"},
		{"liveness: {max_gap: 2000000}", "liveness.max_gap 2000000 out of range 1..1048576"},
		{"liveness: {last_heard: -1s}", "liveness.last_heard -1s out of range"},
		{"socket: {send_hwm: 1000000001}", "socket.send_hwm 1000000001 out of range 1..1000000"},
		{"socket: {receive_hwm: -3}", "socket.receive_hwm -3 out of range"},
		{"socket: {mailbox_messages: 1000000000000}", "socket.mailbox_messages 1000000000000 out of range"},
		{"socket: {mailbox_bytes: 8589934592}", "socket.mailbox_bytes 8589934592 out of range 1..1073741824"},
		{"socket: {send_timeout: 1h}", "socket.send_timeout 1h0m0s out of range 0s..10m0s"},
		{"socket: {receive_timeout: 11m}", "socket.receive_timeout 11m0s out of range"},
		{"servers: [{channel: c, concurrency: 70000}]", "server c: servers.concurrency 70000 out of range 0..65536"},
	} {
		_, err := parseConfig([]byte("meshes:\n  - name: a\n    "+tc.yaml+"\n"), "f.yaml")
		if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "meshes[0]") {
			t.Errorf("%s: %v, want a usage error saying %q", tc.yaml, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: several lines: %q", tc.yaml, err)
		}
	}
	cfg, err := parseConfig([]byte("meshes:\n  - name: a\n    handler_concurrency: 65536\n    socket: {send_timeout: 0s}\n"), "f.yaml")
	if err != nil || cfg.Meshes[0].HandlerConcurrency != 65536 {
		t.Fatalf("values at the limit and 0 (the default): %+v %v", cfg, err)
	}
}

// Every file the CLI reads has a cap; reading stops at it, so /dev/zero
// is refused at once.
func TestReadCapped(t *testing.T) {
	dir := t.TempDir()
	at := filepath.Join(dir, "at")
	if err := os.WriteFile(at, []byte(strings.Repeat("s", maxSecretFile)), 0o600); err != nil {
		t.Fatal(err)
	}
	over := filepath.Join(dir, "over")
	if err := os.WriteFile(over, []byte(strings.Repeat("s", maxSecretFile+1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if s, err := readSecret(at); err != nil || len(s) != maxSecretFile {
		t.Fatalf("a secret of exactly the cap: %d bytes, %v", len(s), err)
	}
	for _, path := range []string{over, "/dev/zero"} {
		if _, err := readSecret(path); !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "secret file "+path+": larger than 4 KiB") {
			t.Errorf("secret %s: %v", path, err)
		}
		if _, err := readAdminToken(path); !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "admin token file "+path+": larger than 4 KiB") {
			t.Errorf("admin token %s: %v", path, err)
		}
	}
	if _, err := loadConfigFile("/dev/zero"); !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "config file /dev/zero: larger than 4 MiB") {
		t.Errorf("config /dev/zero: %v", err)
	}
	if _, err := loadConfigFile(filepath.Join(dir, "missing")); !errors.Is(err, errUsage) {
		t.Errorf("a missing config file: %v", err)
	}
}
