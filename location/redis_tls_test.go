package location_test

import (
	"context"
	"crypto/tls"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/location/locationtest"
)

// connectErr calls NewRedis with cfg, which must fail; it returns the error
// and fails the test if connecting took longer than the dial timeout allows.
func connectErr(t *testing.T, cfg location.RedisConfig) error {
	t.Helper()
	cfg.DialTimeout = time.Second
	cfg.OpTimeout = time.Second
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	start := time.Now()
	s, err := location.NewRedis(ctx, cfg)
	if err == nil {
		_ = s.Close()
		t.Fatalf("NewRedis(%s, tls=%v) succeeded, want a refusal", cfg.Addr, cfg.TLS != nil)
	}
	if d := time.Since(start); d > 4*time.Second {
		t.Fatalf("refusal took %v", d)
	}
	return err
}

func requireContains(t *testing.T, err error, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Fatalf("error %q does not say %q", err, p)
		}
	}
}

func tlsStore(t *testing.T, cfg location.RedisConfig) *location.Redis {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	s, err := location.NewRedis(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if err := s.PutDescriptor(ctx, locationtest.Desc("m", "n", 1, 1), time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetDescriptor(ctx, "m", "n"); err != nil {
		t.Fatal(err)
	}
	return s
}

// A mutually authenticated TLS server: the right client gets in (from Go
// with a *tls.Config and from a rediss:// URL, with an ACL user); every
// mismatch is refused quickly with an error that names the cause.
func TestRedis_TLS(t *testing.T) {
	certs := locationtest.GenerateCerts(t)
	srv := locationtest.StartRedisTLS(t, locationtest.TLSOptions{
		Certs: certs,
		ACL:   []string{"default off", "zl on >s3cret ~* &* +@all"},
	})

	withUser := func(u string) string {
		pu, err := url.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		pu.User = url.UserPassword("zl", "s3cret")
		return pu.String()
	}

	t.Run("GoConfig", func(t *testing.T) {
		tlsStore(t, location.RedisConfig{Addr: srv.Addr(), Username: "zl", Password: "s3cret", TLS: srv.TLSConfig()})
	})
	t.Run("URL", func(t *testing.T) {
		cfg, err := location.ParseRedisURL(withUser(srv.URL()))
		if err != nil {
			t.Fatal(err)
		}
		tlsStore(t, cfg)
	})
	t.Run("WrongPassword", func(t *testing.T) {
		err := connectErr(t, location.RedisConfig{Addr: srv.Addr(), Username: "zl", Password: "nope", TLS: srv.TLSConfig()})
		requireContains(t, err, "WRONGPASS")
	})
	t.Run("WrongCA", func(t *testing.T) {
		cfg, err := location.ParseRedisURL(withUser(strings.Replace(srv.URL(),
			url.QueryEscape(certs.CAFile), url.QueryEscape(certs.OtherCAFile), 1)))
		if err != nil {
			t.Fatal(err)
		}
		err = connectErr(t, cfg)
		var verify *tls.CertificateVerificationError
		if !errors.As(err, &verify) {
			t.Fatalf("error %v (%T), want a *tls.CertificateVerificationError", err, err)
		}
		requireContains(t, err, "over TLS", "not trusted by the configured CA")
	})
	t.Run("WrongServerName", func(t *testing.T) {
		cfg, err := location.ParseRedisURL(withUser(srv.URL() + "&servername=redis.example"))
		if err != nil {
			t.Fatal(err)
		}
		err = connectErr(t, cfg)
		var verify *tls.CertificateVerificationError
		if !errors.As(err, &verify) {
			t.Fatalf("error %v (%T), want a *tls.CertificateVerificationError", err, err)
		}
	})
	t.Run("NoClientCert", func(t *testing.T) {
		c := srv.TLSConfig()
		c.Certificates = nil
		err := connectErr(t, location.RedisConfig{Addr: srv.Addr(), Username: "zl", Password: "s3cret", TLS: c})
		requireContains(t, err, "over TLS", "client certificate")
	})
	t.Run("PlaintextClient", func(t *testing.T) {
		err := connectErr(t, location.RedisConfig{Addr: srv.Addr(), Username: "zl", Password: "s3cret"})
		requireContains(t, err, "use rediss://")
	})
	t.Run("InsecureSkipVerifyRefused", func(t *testing.T) {
		err := connectErr(t, location.RedisConfig{Addr: srv.Addr(), TLS: &tls.Config{InsecureSkipVerify: true}})
		if !errors.Is(err, location.ErrInvalid) {
			t.Fatalf("error %v, want ErrInvalid", err)
		}
	})
}

// The client certificate is optional when the server does not ask for one.
func TestRedis_TLSServerAuthOnly(t *testing.T) {
	certs := locationtest.GenerateCerts(t)
	srv := locationtest.StartRedisTLS(t, locationtest.TLSOptions{Certs: certs, AuthClients: "no"})
	cfg, err := location.ParseRedisURL("rediss://" + srv.Addr() + "?ca=" + url.QueryEscape(certs.CAFile))
	if err != nil {
		t.Fatal(err)
	}
	tlsStore(t, cfg)
}

// A TLS client against a plain server fails within the dial timeout and
// says the server may not speak TLS.
func TestRedis_TLSClientPlainServer(t *testing.T) {
	certs := locationtest.GenerateCerts(t)
	srv := locationtest.StartRedis(t)
	cfg, err := location.ParseRedisURL("rediss://" + srv.Addr() + "?ca=" + url.QueryEscape(certs.CAFile))
	if err != nil {
		t.Fatal(err)
	}
	err = connectErr(t, cfg)
	requireContains(t, err, "over TLS")
	if !strings.Contains(err.Error(), "does not speak TLS") && !strings.Contains(err.Error(), "tls:") {
		t.Fatalf("error %q does not point at TLS", err)
	}
}
