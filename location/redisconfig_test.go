package location_test

import (
	"crypto/tls"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/location/locationtest"
)

func TestParseRedisURL(t *testing.T) {
	good := []struct {
		in         string
		addr       string
		db         int
		user, pass string
	}{
		{"redis://127.0.0.1:6380", "127.0.0.1:6380", 0, "", ""},
		{"redis://redis.local:7000/3", "redis.local:7000", 3, "", ""},
		{"redis://redis.local", "redis.local:6379", 0, "", ""},
		{"redis://[::1]:6379/0", "[::1]:6379", 0, "", ""},
		{"redis://:secret@h:1/2", "h:1", 2, "", "secret"},
		{"redis://u:p@h:1", "h:1", 0, "u", "p"},
	}
	for _, tc := range good {
		cfg, err := location.ParseRedisURL(tc.in)
		if err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		if cfg.Addr != tc.addr || cfg.DB != tc.db || cfg.Username != tc.user || cfg.Password != tc.pass {
			t.Errorf("%s: %+v", tc.in, cfg)
		}
		if cfg.Prefix != "zlink" || cfg.PollInterval != time.Second {
			t.Errorf("%s: defaults not applied: %+v", tc.in, cfg)
		}
	}
	for _, in := range []string{
		"", "127.0.0.1:6379", "http://h:1", "redis://", "redis://h:0",
		"redis://h:99999", "redis://h:1/x", "redis://h:1/-1", "redis://h:1?db=2", "redis://h:1/2/3",
	} {
		if _, err := location.ParseRedisURL(in); !errors.Is(err, location.ErrInvalid) {
			t.Errorf("%q: error %v, want ErrInvalid", in, err)
		}
	}
}

// The cluster form names more nodes with repeated addr parameters.
func TestParseRedisURL_Cluster(t *testing.T) {
	cfg, err := location.ParseRedisURL("redis://u:p@h1:7000?addr=h2:7001&addr=%5B::1%5D:7002")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Addr != "h1:7000" || !slices.Equal(cfg.Addrs, []string{"h2:7001", "[::1]:7002"}) || cfg.Username != "u" || cfg.Password != "p" {
		t.Fatalf("config %+v", cfg)
	}
	certs := locationtest.GenerateCerts(t)
	cfg, err = location.ParseRedisURL("rediss://h1:7000?ca=" + certs.CAFile + "&addr=h2:7001")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.TLS == nil || !slices.Equal(cfg.Addrs, []string{"h2:7001"}) {
		t.Fatalf("config %+v", cfg)
	}
	if cfg, err := location.ParseRedisURL("redis://h1:7000"); err != nil || cfg.Addrs != nil {
		t.Fatalf("addrs %v %v", cfg.Addrs, err)
	}
	for _, in := range []string{
		"redis://h1:7000?addr=h2",             // no port
		"redis://h1:7000?addr=",               // empty
		"redis://h1:7000/1?addr=h2:7001",      // a Cluster has only db 0
		"redis://h1:7000?addr=h2:7001&x=1",    // unknown parameter
		"redis://h1:7000?addr=h2:7001&ca=foo", // TLS settings on a plain URL
	} {
		if _, err := location.ParseRedisURL(in); !errors.Is(err, location.ErrInvalid) {
			t.Errorf("%q: error %v, want ErrInvalid", in, err)
		}
	}
}

func TestRedisConfig_ReplicaSettings(t *testing.T) {
	ctx := t.Context()
	for name, cfg := range map[string]location.RedisConfig{
		"unknown acks":            {Addr: "h:1", ReplicaAcks: 9},
		"negative timeout":        {Addr: "h:1", ReplicaTimeout: -1},
		"timeout above OpTimeout": {Addr: "h:1", ReplicaTimeout: 2 * time.Second, OpTimeout: time.Second},
		"sub-millisecond timeout": {Addr: "h:1", ReplicaTimeout: time.Microsecond},
		"negative refresh":        {Addr: "h:1", ReplicaRefresh: -1},
		"bad cluster addr":        {Addr: "h:1", Addrs: []string{"h2"}},
	} {
		if _, err := location.NewRedis(ctx, cfg); !errors.Is(err, location.ErrInvalid) {
			t.Errorf("%s: error %v, want ErrInvalid", name, err)
		}
	}
	d := location.DefaultRedisConfig()
	if d.ReplicaAcks != location.ReplicaAcksAuto || d.ReplicaTimeout != time.Second || d.ReplicaRefresh != 5*time.Second {
		t.Fatalf("defaults %+v", d)
	}
	if location.ReplicaAcksAuto.String() != "auto" || location.ReplicaAcksAlways.String() != "always" || location.ReplicaAcksNever.String() != "never" {
		t.Fatal("ReplicaAcks names")
	}
}

func TestParseRedisURL_TLS(t *testing.T) {
	certs := locationtest.GenerateCerts(t)
	notPEM := filepath.Join(t.TempDir(), "not.pem")
	if err := os.WriteFile(notPEM, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	ca, cert, key := certs.CAFile, certs.ClientCertFile, certs.ClientKeyFile

	cfg, err := location.ParseRedisURL("rediss://u:p@h:6380/2?ca=" + ca + "&cert=" + cert + "&key=" + key + "&servername=redis.internal")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.TLS == nil || cfg.TLS.RootCAs == nil || len(cfg.TLS.Certificates) != 1 ||
		cfg.TLS.ServerName != "redis.internal" || cfg.TLS.MinVersion != tls.VersionTLS12 || cfg.TLS.InsecureSkipVerify {
		t.Fatalf("tls config %+v", cfg.TLS)
	}
	if cfg.Addr != "h:6380" || cfg.DB != 2 || cfg.Username != "u" || cfg.Password != "p" {
		t.Fatalf("config %+v", cfg)
	}
	// Without ca the system roots verify the server; no client certificate.
	cfg, err = location.ParseRedisURL("rediss://h")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.TLS == nil || cfg.TLS.RootCAs != nil || len(cfg.TLS.Certificates) != 0 || cfg.Addr != "h:6379" {
		t.Fatalf("tls config %+v, addr %s", cfg.TLS, cfg.Addr)
	}
	if cfg, err := location.ParseRedisURL("redis://h"); err != nil || cfg.TLS != nil {
		t.Fatalf("redis:// set TLS: %+v %v", cfg.TLS, err)
	}

	for _, in := range []string{
		"rediss://h:1?ca=" + ca + "&insecure=1",                     // unknown parameter
		"rediss://h:1?skip_verify=true",                             // no way to skip verification
		"rediss://h:1?ca=" + ca + "&ca=" + ca,                       // twice
		"rediss://h:1?cert=" + cert,                                 // cert without key
		"rediss://h:1?key=" + key,                                   // key without cert
		"rediss://h:1?ca=/nonexistent/ca.pem",                       // unreadable
		"rediss://h:1?ca=" + notPEM,                                 // no certificate in it
		"rediss://h:1?cert=" + notPEM + "&key=" + key,               // not a key pair
		"rediss://h:1?cert=" + cert + "&key=" + certs.ServerKeyFile, // key of another certificate
		"redis://h:1?ca=" + ca,                                      // TLS settings on a plain URL
		"rediss://h:1?ca=%zz",                                       // bad escape
	} {
		if _, err := location.ParseRedisURL(in); !errors.Is(err, location.ErrInvalid) {
			t.Errorf("%q: error %v, want ErrInvalid", in, err)
		}
	}
	// A password never appears in an error.
	if _, err := location.ParseRedisURL("rediss://u:hunter2@h:1?bogus=1"); err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("error %v leaks the password", err)
	}
}
