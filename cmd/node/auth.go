package main

import (
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/zlink-go/zlink/admin"
)

// readAdminToken reads the admin bearer token file ("" → no token). A
// token shorter than admin.MinTokenBytes is refused: it would be
// guessable.
func readAdminToken(path string) ([]byte, error) {
	if path == "" {
		return nil, nil
	}
	tok, err := readSecret(path)
	if err != nil {
		return nil, usagef(strings.Replace(err.Error(), "secret file", "admin token file", 1))
	}
	if len(tok) < admin.MinTokenBytes {
		return nil, usagef(fmt.Sprintf("admin token file %s: the token is %d bytes; use at least %d", path, len(tok), admin.MinTokenBytes))
	}
	return tok, nil
}

// checkAdminExposure refuses an admin address other hosts can reach
// when no token protects the endpoints that change the node
// (admin.CheckExposure, in the command line's words).
func checkAdminExposure(addr string, token []byte) error {
	err := admin.CheckExposure(addr, admin.Options{Token: token})
	if err == nil {
		return nil
	}
	if errors.Is(err, admin.ErrExposed) {
		return usagef(fmt.Sprintf("--admin %q is reachable from other hosts: give --admin-token-file (mutating endpoints then need it) or bind 127.0.0.1", addr))
	}
	var ae *net.AddrError
	if errors.As(err, &ae) {
		return usagef(fmt.Sprintf("--admin %q: %v", addr, ae))
	}
	return usagef(fmt.Sprintf("--admin %q: %v", addr, err))
}
