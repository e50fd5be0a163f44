package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const testToken = "0123456789abcdef-admin-token"

func TestAdmin_ExposureNeedsAToken(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:0", "localhost:9100", "[::1]:0"} {
		if err := checkAdminExposure(addr, nil); err != nil {
			t.Errorf("%s without a token: %v", addr, err)
		}
	}
	for _, addr := range []string{"0.0.0.0:9100", ":9100", "10.1.2.3:9100", "[::]:0"} {
		err := checkAdminExposure(addr, nil)
		var ue *usageError
		if err == nil || !errors.As(err, &ue) || !strings.Contains(err.Error(), "--admin-token-file") {
			t.Errorf("%s without a token: %v, want a usage error naming --admin-token-file", addr, err)
		}
		if err := checkAdminExposure(addr, []byte(testToken)); err != nil {
			t.Errorf("%s with a token: %v", addr, err)
		}
	}
}

func TestAdmin_TokenFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if tok, err := readAdminToken(write("ok", testToken+"\n")); err != nil || string(tok) != testToken {
		t.Fatalf("good file: %q %v", tok, err)
	}
	for name, content := range map[string]string{"short": "tooshort", "empty": "\n"} {
		if _, err := readAdminToken(write(name, content)); err == nil {
			t.Errorf("%s token accepted", name)
		}
	}
	if _, err := readAdminToken(filepath.Join(dir, "missing")); err == nil {
		t.Error("missing file accepted")
	}
}
