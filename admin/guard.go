package admin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// What the admin API refuses before any handler acts: bodies over
// maxBodyBytes, bodies that are not exactly one JSON object of the
// endpoint's fields, methods an endpoint does not take, and clients too
// slow to send their request (the server's timeouts).

// maxBodyBytes bounds every admin request body.
const maxBodyBytes = 64 << 10

// maxHeaderBytes bounds the request line and headers (NewServer).
const maxHeaderBytes = 64 << 10

// Timeouts of the admin HTTP server. A client that trickles its headers
// (readHeaderTimeout) or its body (readTimeout), idles on a keep-alive
// connection (idleTimeout) or does not read its answer (writeTimeout) is
// disconnected. The endpoints that wait for a drain or a move (longWrite)
// get room for the longest one a request may ask for.
const (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 10 * time.Second
	idleTimeout       = 60 * time.Second
	writeTimeout      = 30 * time.Second
	longWriteTimeout  = MaxDrainTimeout + 10*time.Second
)

// longWrite gives h's answer room for the longest drain or move: its
// handler may run that long before it writes.
func longWrite(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(longWriteTimeout))
		h(w, r)
	}
}

// Refusals of malformed admin requests (matched with errors.Is; the JSON
// error body carries the code).
var (
	// errBodyTooLarge: the body is over maxBodyBytes (413, body_too_large).
	errBodyTooLarge = errors.New("admin: request body too large")
	// errBadBody: the body is not one JSON object of the endpoint's
	// fields: malformed, truncated, an unknown field, a value of the wrong
	// type, or trailing data (400, bad_body).
	errBadBody = errors.New("admin: bad request body")
	// errBodyTimeout: the body did not arrive within the read timeout
	// (408, body_timeout).
	errBodyTimeout = errors.New("admin: request body not received in time")
	// errMethod: the endpoint does not take this method (405,
	// method_not_allowed; the Allow header lists those it takes).
	errMethod = errors.New("admin: method not allowed")
)

// NewServer returns an HTTP server for the admin API h (an *API or the
// Handler, whose bodies are bounded already) with every timeout set: a
// client that trickles its headers or body, idles on a kept-alive
// connection or does not read its answer is disconnected, and headers are
// bounded. The endpoints that wait for a drain or a move, and /ui's event
// stream, extend their own write deadline. An embedder that mounts the API
// on a server of its own should set comparable timeouts there.
func NewServer(h http.Handler) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: readHeaderTimeout, ReadTimeout: readTimeout,
		WriteTimeout: writeTimeout, IdleTimeout: idleTimeout, MaxHeaderBytes: maxHeaderBytes}
}

// limitBodies refuses a body announced over maxBodyBytes at once, and cuts
// any other at the limit (the handler's read then fails with
// *http.MaxBytesError).
func limitBodies(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > maxBodyBytes {
			writeErrCode(w, http.StatusRequestEntityTooLarge, "body_too_large",
				fmt.Errorf("%w: %d bytes announced, limit %d", errBodyTooLarge, r.ContentLength, maxBodyBytes))
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxBodyBytes)
		next.ServeHTTP(w, r)
	})
}

// writeErrCode answers an error with its stable code.
func writeErrCode(w http.ResponseWriter, status int, code string, err error) {
	writeJSON(w, status, ErrorResponse{Error: err.Error(), Code: code})
}

// readJSON decodes the body of r into v: exactly one JSON object with only
// v's fields. An empty body is accepted when optional. On failure it
// answers the request (413, 408 or 400 with a JSON error) and returns
// false.
func readJSON(w http.ResponseWriter, r *http.Request, what string, v any, optional bool) bool {
	dec := json.NewDecoder(r.Body)
	var raw json.RawMessage
	err := dec.Decode(&raw)
	if err == nil {
		// One value only: anything after it but spaces is refused.
		if _, terr := dec.Token(); !errors.Is(terr, io.EOF) {
			err = errors.New("data after the JSON object")
			if terr != nil && !isSyntax(terr) {
				err = terr
			}
		}
	}
	if err == nil {
		if bytes.Equal(raw, []byte("null")) {
			// json would take null for an empty object: refuse it.
			err = errors.New("want a JSON object, got null")
		} else {
			strict := json.NewDecoder(bytes.NewReader(raw))
			strict.DisallowUnknownFields()
			err = strict.Decode(v)
		}
	}
	if err == nil || (optional && errors.Is(err, io.EOF)) {
		return true
	}
	var (
		tooBig  *http.MaxBytesError
		syntax  *json.SyntaxError
		typeErr *json.UnmarshalTypeError
		netErr  net.Error
	)
	switch {
	case errors.As(err, &tooBig):
		writeErrCode(w, http.StatusRequestEntityTooLarge, "body_too_large",
			fmt.Errorf("%s: %w: over %d bytes", what, errBodyTooLarge, tooBig.Limit))
		return false
	case errors.As(err, &netErr) && netErr.Timeout():
		writeErrCode(w, http.StatusRequestTimeout, "body_timeout", fmt.Errorf("%s: %w", what, errBodyTimeout))
		return false
	case errors.Is(err, io.EOF):
		err = errors.New("empty body, want a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		err = errors.New("truncated JSON")
	case errors.As(err, &syntax):
		err = fmt.Errorf("malformed JSON at byte %d: %v", syntax.Offset, syntax)
	case errors.As(err, &typeErr):
		if typeErr.Field == "" {
			err = fmt.Errorf("want a JSON object, got %s", typeErr.Value)
		} else {
			err = fmt.Errorf("field %s: want %s, got %s", strconv.Quote(typeErr.Field), jsonKind(typeErr.Type.Kind()), typeErr.Value)
		}
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		err = fmt.Errorf("unknown field %s", strings.TrimPrefix(err.Error(), "json: unknown field "))
	}
	writeErrCode(w, http.StatusBadRequest, "bad_body", fmt.Errorf("%s: %w: %v", what, errBadBody, err))
	return false
}

// jsonKind names what a Go field of kind k takes in JSON.
func jsonKind(k reflect.Kind) string {
	switch k {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer in range"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	default:
		return "an object"
	}
}

func isSyntax(err error) bool {
	var s *json.SyntaxError
	return errors.As(err, &s)
}

// routeTable registers admin routes and remembers each path's methods, so
// that refuseOtherMethods can answer any other method with a JSON 405.
type routeTable struct {
	mux     *http.ServeMux
	methods map[string][]string // path → methods, in registration order
	paths   []string
}

func newRouteTable(mux *http.ServeMux) *routeTable {
	return &routeTable{mux: mux, methods: map[string][]string{}}
}

// handle registers h for method on path.
func (t *routeTable) handle(method, path string, h http.Handler) {
	t.mux.Handle(method+" "+path, h)
	if _, ok := t.methods[path]; !ok {
		t.paths = append(t.paths, path)
	}
	t.methods[path] = append(t.methods[path], method)
	if method == http.MethodGet {
		t.methods[path] = append(t.methods[path], http.MethodHead) // GET patterns serve HEAD too
	}
}

func (t *routeTable) handleFunc(method, path string, h http.HandlerFunc) { t.handle(method, path, h) }

// refuseOtherMethods answers every other method on the registered paths
// with 405, an Allow header and a JSON error.
func (t *routeTable) refuseOtherMethods() {
	for _, path := range t.paths {
		allow := strings.Join(t.methods[path], ", ")
		t.mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", allow)
			writeErrCode(w, http.StatusMethodNotAllowed, "method_not_allowed",
				fmt.Errorf("%w: %s %s; it takes %s", errMethod, r.Method, path, allow))
		})
	}
}
