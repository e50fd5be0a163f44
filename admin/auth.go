package admin

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"mime"
	"net"
	"net/http"
	"slices"
	"strings"
)

// Who may use the admin API: the token (Options.Token) guards what
// changes the node; without one, only requests addressed to a loopback
// host are served at all (a web page cannot rebind a name of its own to
// 127.0.0.1 and read or drain the node); and a mutating request must be
// JSON from no foreign origin (a web page cannot forge one: a cross-site
// form or no-cors fetch cannot send Content-Type: application/json, and a
// CORS one carries its Origin).

// Refusals of who sent the request (matched with errors.Is; the JSON
// error body carries the code).
var (
	// ErrUnauthorized: the endpoint needs the admin token (401,
	// unauthorized).
	ErrUnauthorized = errors.New("admin: this endpoint needs the admin token (Authorization: Bearer …)")
	// ErrForbiddenHost: no token is set and the request's Host is not
	// loopback, localhost or in Options.AllowedHosts (403,
	// forbidden_host).
	ErrForbiddenHost = errors.New("admin: host not allowed")
	// ErrForbiddenOrigin: a mutating request's Origin is neither the
	// admin's own nor in Options.AllowedOrigins (403, forbidden_origin).
	ErrForbiddenOrigin = errors.New("admin: origin not allowed")
	// ErrContentType: a mutating request without Content-Type:
	// application/json (403, content_type), body or not.
	ErrContentType = errors.New("admin: a request that changes the node needs Content-Type: application/json")
	// ErrReadOnly: the API is read-only (Options.ReadOnly; 403,
	// read_only).
	ErrReadOnly = errors.New("admin: read-only: this endpoint changes the node")
	// ErrExposed: CheckExposure refused an address other hosts can reach
	// without a token (an unparsable address is another error).
	ErrExposed = errors.New("admin: reachable from other hosts without a token")
)

// CheckExposure refuses to serve the API without a token on an address
// other hosts can reach: anyone there could change the node. addr is
// HOST:PORT as given to net.Listen; loopback addresses and localhost pass.
func CheckExposure(addr string, opts Options) error {
	if len(opts.Token) > 0 {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("admin: address %q: %w", addr, err)
	}
	if isLoopbackHost(host) {
		return nil
	}
	return fmt.Errorf("%w: %q: set a token or bind 127.0.0.1", ErrExposed, addr)
}

// isLoopbackHost reports whether host (without port) is localhost, a
// name under .localhost or a loopback IP.
func isLoopbackHost(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
	return ip != nil && ip.IsLoopback()
}

// guardHost refuses, when no token is set, a request whose Host is not
// loopback, localhost or allowed: every endpoint, reads too.
func (a *API) guardHost(next http.Handler) http.Handler {
	if len(a.opts.Token) > 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := r.Host
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		if host == "" || (!isLoopbackHost(host) && !slices.ContainsFunc(a.opts.AllowedHosts, func(s string) bool { return strings.EqualFold(s, host) })) {
			a.log.Warn().Str("host", r.Host).Str("path", r.URL.Path).Msg("admin: request refused: host not allowed")
			writeErrCode(w, http.StatusForbidden, "forbidden_host",
				fmt.Errorf("%w: %q: without an admin token only loopback hosts are served (or list it in the allowed hosts)", ErrForbiddenHost, r.Host))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// hasToken reports whether r carries the token (compared in constant
// time).
func (a *API) hasToken(r *http.Request) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(got), a.opts.Token) == 1
}

// unauthorized answers a request without the token.
func unauthorized(w http.ResponseWriter) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="zlink-admin"`)
	writeErrCode(w, http.StatusUnauthorized, "unauthorized", ErrUnauthorized)
}

// read wraps a read endpoint: with ProtectReads it needs the token.
func (a *API) read(h http.HandlerFunc) http.HandlerFunc {
	if !a.opts.ProtectReads {
		return h
	}
	return func(w http.ResponseWriter, r *http.Request) {
		if !a.hasToken(r) {
			unauthorized(w)
			return
		}
		h(w, r)
	}
}

// mutating wraps an endpoint that changes the node: refused in read-only
// mode, then without the token (when one is set), then when it is not
// JSON or comes from a foreign origin.
func (a *API) mutating(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if a.opts.ReadOnly {
			writeErrCode(w, http.StatusForbidden, "read_only", ErrReadOnly)
			return
		}
		if len(a.opts.Token) > 0 && !a.hasToken(r) {
			unauthorized(w)
			return
		}
		if !a.crossSiteOK(w, r) {
			return
		}
		h(w, r)
	}
}

// crossSiteOK refuses a request a web page could have sent: one that is
// not Content-Type: application/json, or whose Origin is foreign. It
// answers the request itself when it returns false.
func (a *API) crossSiteOK(w http.ResponseWriter, r *http.Request) bool {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		a.log.Warn().Str("content_type", r.Header.Get("Content-Type")).Str("path", r.URL.Path).Msg("admin: request refused: not JSON")
		writeErrCode(w, http.StatusForbidden, "content_type",
			fmt.Errorf("%w (got %q)", ErrContentType, r.Header.Get("Content-Type")))
		return false
	}
	origin := r.Header.Get("Origin")
	if origin == "" || a.originOK(r, origin) {
		return true
	}
	a.log.Warn().Str("origin", origin).Str("path", r.URL.Path).Msg("admin: request refused: foreign origin")
	writeErrCode(w, http.StatusForbidden, "forbidden_origin",
		fmt.Errorf("%w: %q: only the admin's own origin and the allowed origins may change the node", ErrForbiddenOrigin, origin))
	return false
}

// originOK reports whether origin is the admin's own (the scheme and Host
// the request was sent to) or an allowed one.
func (a *API) originOK(r *http.Request, origin string) bool {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if strings.EqualFold(origin, scheme+"://"+r.Host) {
		return true
	}
	return slices.ContainsFunc(a.opts.AllowedOrigins, func(s string) bool {
		return strings.EqualFold(strings.TrimSuffix(s, "/"), origin)
	})
}
