package main

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
)

// errUnauthorized answers a mutating admin request without the right
// bearer token.
var errUnauthorized = errors.New("admin: this endpoint changes the node: it needs the admin token (Authorization: Bearer …)")

// readAdminToken reads the admin bearer token file ("" → no token). A
// token shorter than 16 bytes is refused: it would be guessable.
func readAdminToken(path string) ([]byte, error) {
	if path == "" {
		return nil, nil
	}
	tok, err := readSecret(path)
	if err != nil {
		return nil, usagef(strings.Replace(err.Error(), "secret file", "admin token file", 1))
	}
	if len(tok) < 16 {
		return nil, usagef(fmt.Sprintf("admin token file %s: the token is %d bytes; use at least 16", path, len(tok)))
	}
	return tok, nil
}

// checkAdminExposure refuses an admin address other hosts can reach when
// no token protects the endpoints that change the node.
func checkAdminExposure(addr string, token []byte) error {
	if len(token) > 0 {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return usagef(fmt.Sprintf("--admin %q: %v", addr, err))
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return usagef(fmt.Sprintf("--admin %q is reachable from other hosts: give --admin-token-file (mutating endpoints then need it) or bind 127.0.0.1", addr))
}

// requireToken wraps a mutating handler: with a token configured, the
// request must carry it as a bearer token (compared in constant time).
func (a *app) requireToken(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if len(a.token) > 0 {
			got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if !ok || subtle.ConstantTimeCompare([]byte(got), a.token) != 1 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="zlink-node"`)
				writeErrCode(w, http.StatusUnauthorized, "unauthorized", errUnauthorized)
				return
			}
		}
		h(w, r)
	}
}
