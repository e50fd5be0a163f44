package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/rs/zerolog"
	"go.yaml.in/yaml/v3"

	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/spot"
	"github.com/zlink-go/zlink/spot/counter"
)

// fileConfig is the YAML config file of `run --config`. It holds what the
// flags hold and more, including several meshes. Unknown keys are an error.
type fileConfig struct {
	// Admin is the admin HTTP address. Default 127.0.0.1:0.
	Admin string `yaml:"admin"`
	// Location is "none" (default), redis://HOST:PORT[/DB], or
	// rediss://HOST:PORT[/DB]?ca=FILE[&cert=FILE&key=FILE] for TLS.
	Location string `yaml:"location"`
	// LogLevel is a zerolog level name. Default warn.
	LogLevel string `yaml:"log_level"`
	// LogFormat is json or console. Default json.
	LogFormat string `yaml:"log_format"`
	// SecretFile is the default trust secret of every mesh.
	SecretFile string `yaml:"secret_file"`
	// AdminTokenFile holds the admin bearer token: the endpoints that
	// change the node (weight, drain, undrain) need it. Required when Admin
	// is not a loopback address.
	AdminTokenFile string `yaml:"admin_token_file"`
	// TLS turns on TLS with mutual authentication for the mesh links of
	// every mesh (ca, cert, key PEM files; all three or none).
	TLS tlsFiles `yaml:"tls"`
	// Meshes are the MeshNodes of this process, one per MeshName.
	Meshes []meshConfig `yaml:"meshes"`
}

// meshConfig is one MeshNode.
type meshConfig struct {
	Name      string   `yaml:"name"`
	Listen    string   `yaml:"listen"`
	Advertise string   `yaml:"advertise"`
	RID       string   `yaml:"rid"`
	RIDPrefix string   `yaml:"rid_prefix"`
	Peers     []string `yaml:"peers"` // ENDPOINT[#RID]
	// Servers are the Server roles: channel, weight (default 100),
	// concurrency (default: handler_concurrency).
	Servers    []serverConfig `yaml:"servers"`
	Clients    []string       `yaml:"clients"`
	Object     string         `yaml:"object"` // none|client|server
	SecretFile string         `yaml:"secret_file"`
	// TLS replaces the file's top-level tls for this mesh.
	TLS *tlsFiles `yaml:"tls"`
	// HandlerConcurrency is how many handlers of one owner run at once.
	HandlerConcurrency int             `yaml:"handler_concurrency"`
	DrainTimeout       time.Duration   `yaml:"drain_timeout"`
	ShutdownTimeout    time.Duration   `yaml:"shutdown_timeout"`
	Liveness           *livenessConfig `yaml:"liveness"`
	Socket             *socketConfig   `yaml:"socket"`
}

type serverConfig struct {
	Channel     string `yaml:"channel"`
	Weight      *int   `yaml:"weight"`
	Concurrency int    `yaml:"concurrency"`
}

type livenessConfig struct {
	Interval  time.Duration `yaml:"interval"`
	MaxGap    int           `yaml:"max_gap"`
	LastHeard time.Duration `yaml:"last_heard"`
}

type socketConfig struct {
	SendHWM         int           `yaml:"send_hwm"`
	ReceiveHWM      int           `yaml:"receive_hwm"`
	MailboxMessages int64         `yaml:"mailbox_messages"`
	MailboxBytes    int64         `yaml:"mailbox_bytes"`
	SendTimeout     time.Duration `yaml:"send_timeout"`
	ReceiveTimeout  time.Duration `yaml:"receive_timeout"`
}

// Caps on the files the CLI reads: reading stops at the cap, so a huge
// file (or /dev/zero) is refused at once instead of filling memory.
const (
	maxSecretFile = 4 << 10 // a trust secret or an admin token
	maxConfigFile = 4 << 20 // a YAML config file
)

// readCapped reads the file at path (what names it in errors, e.g.
// "secret file"), refusing one larger than limit bytes without reading
// past the limit.
func readCapped(path, what string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, usagef(what + ": " + err.Error())
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, usagef(what + ": " + err.Error())
	}
	if int64(len(raw)) > limit {
		return nil, usagef(fmt.Sprintf("%s %s: larger than %s", what, path, byteSize(limit)))
	}
	return raw, nil
}

// byteSize writes a cap in KiB or MiB.
func byteSize(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d KiB", n>>10)
}

// loadConfigFile reads a YAML config file strictly (unknown keys fail).
func loadConfigFile(path string) (*fileConfig, error) {
	raw, err := readCapped(path, "config file", maxConfigFile)
	if err != nil {
		return nil, err
	}
	return parseConfig(raw, path)
}

func parseConfig(raw []byte, name string) (*fileConfig, error) {
	var cfg fileConfig
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil && !errors.Is(err, io.EOF) {
		return nil, usagef(oneLine(fmt.Sprintf("config file %s: %v", name, err)))
	}
	for i := range cfg.Meshes {
		if err := cfg.Meshes[i].checkNumbers(); err != nil {
			return nil, usagef(fmt.Sprintf("config file %s: meshes[%d]: %v", name, i, err))
		}
	}
	return &cfg, nil
}

// yamlLimits maps each numeric YAML setting of a mesh to the range of the
// routemesh setting it sets (routemesh.Limits). 0 (or absent) keeps the
// default.
var yamlLimits = map[string]string{
	"handler_concurrency":     "HandlerConcurrency",
	"drain_timeout":           "DrainTimeout",
	"shutdown_timeout":        "ShutdownTimeout",
	"liveness.interval":       "Liveness.Interval",
	"liveness.max_gap":        "Liveness.MaxGap",
	"liveness.last_heard":     "Liveness.LastHeard",
	"socket.send_hwm":         "Socket.SendHWM",
	"socket.receive_hwm":      "Socket.ReceiveHWM",
	"socket.mailbox_messages": "Socket.MailboxMessageBudget",
	"socket.mailbox_bytes":    "Socket.MailboxByteBudget",
	"socket.send_timeout":     "Socket.SendTimeout",
	"socket.receive_timeout":  "Socket.ReceiveTimeout",
	"servers.concurrency":     "Channel.Concurrency",
}

// checkNumbers refuses a numeric setting outside its documented range:
// one line naming the YAML setting and the range. (A server's weight is
// refused at Start: ErrWeightRange names it.)
func (m *meshConfig) checkNumbers() error {
	check := func(key string, v int64) error {
		if v == 0 {
			return nil // the default
		}
		for _, l := range routemesh.Limits() {
			if l.Setting != yamlLimits[key] {
				continue
			}
			if v >= l.Min && v <= l.Max {
				return nil
			}
			shown := strconv.FormatInt(v, 10)
			if l.Duration {
				shown = time.Duration(v).String()
			}
			return fmt.Errorf("%s %s out of range %s (0 or absent: the default)", key, shown, l.Range())
		}
		panic("node: no routemesh limit for " + key)
	}
	nums := []struct {
		key string
		v   int64
	}{{"handler_concurrency", int64(m.HandlerConcurrency)}, {"drain_timeout", int64(m.DrainTimeout)},
		{"shutdown_timeout", int64(m.ShutdownTimeout)}}
	if l := m.Liveness; l != nil {
		nums = append(nums, []struct {
			key string
			v   int64
		}{{"liveness.interval", int64(l.Interval)}, {"liveness.max_gap", int64(l.MaxGap)}, {"liveness.last_heard", int64(l.LastHeard)}}...)
	}
	if s := m.Socket; s != nil {
		nums = append(nums, []struct {
			key string
			v   int64
		}{{"socket.send_hwm", int64(s.SendHWM)}, {"socket.receive_hwm", int64(s.ReceiveHWM)},
			{"socket.mailbox_messages", s.MailboxMessages}, {"socket.mailbox_bytes", s.MailboxBytes},
			{"socket.send_timeout", int64(s.SendTimeout)}, {"socket.receive_timeout", int64(s.ReceiveTimeout)}}...)
	}
	for _, n := range nums {
		if err := check(n.key, n.v); err != nil {
			return err
		}
	}
	for _, sc := range m.Servers { // a weight is checked at Start (ErrWeightRange)
		if err := check("servers.concurrency", int64(sc.Concurrency)); err != nil {
			return fmt.Errorf("server %s: %w", sc.Channel, err)
		}
	}
	return nil
}

// parseServer parses CHANNEL[=WEIGHT].
func parseServer(s string) (serverConfig, error) {
	name, w, hasW := strings.Cut(s, "=")
	if name == "" {
		return serverConfig{}, usagef(fmt.Sprintf("--server %q: empty channel name", s))
	}
	sc := serverConfig{Channel: name}
	if hasW {
		v, err := strconv.Atoi(w)
		if err != nil {
			return serverConfig{}, usagef(fmt.Sprintf("--server %q: weight must be an integer 0..10000", s))
		}
		sc.Weight = &v
	}
	return sc, nil
}

// parsePeer parses ENDPOINT[#RID].
func parsePeer(s string) (routemesh.PeerConfig, error) {
	ep, rid, _ := strings.Cut(s, "#")
	if ep == "" {
		return routemesh.PeerConfig{}, usagef(fmt.Sprintf("--peer %q: empty endpoint", s))
	}
	ep, err := tcpEndpoint("--peer", ep)
	if err != nil {
		return routemesh.PeerConfig{}, err
	}
	return routemesh.PeerConfig{Endpoint: ep, ExpectRID: rid}, nil
}

// tcpEndpoint accepts tcp://HOST:PORT and a bare HOST:PORT (which gets
// tcp://); anything else is refused with what to write.
func tcpEndpoint(flag, ep string) (string, error) {
	if strings.HasPrefix(ep, "tcp://") {
		return ep, nil
	}
	if !strings.Contains(ep, "://") {
		if _, port, err := net.SplitHostPort(ep); err == nil && port != "" {
			return "tcp://" + ep, nil
		}
	}
	return "", usagef(fmt.Sprintf("%s %q: want tcp://HOST:PORT (or HOST:PORT), e.g. tcp://127.0.0.1:7002", flag, ep))
}

func parseObjectRole(s string) (routemesh.ObjectRole, error) {
	switch s {
	case "", "none":
		return routemesh.ObjectNone, nil
	case "client":
		return routemesh.ObjectClient, nil
	case "server":
		return routemesh.ObjectServer, nil
	}
	return 0, usagef(fmt.Sprintf("--object %q: want none, client or server", s))
}

// readSecret reads a trust secret file (surrounding whitespace trimmed),
// at most maxSecretFile bytes.
func readSecret(path string) ([]byte, error) {
	if path == "" {
		return nil, nil
	}
	raw, err := readCapped(path, "secret file", maxSecretFile)
	if err != nil {
		return nil, err
	}
	s := bytes.TrimSpace(raw)
	if len(s) == 0 {
		return nil, usagef("secret file " + path + " is empty")
	}
	return s, nil
}

// newLogger builds the process logger on w (stderr).
func newLogger(w io.Writer, level, format string) (zerolog.Logger, error) {
	if level == "" {
		level = "warn"
	}
	lvl, err := zerolog.ParseLevel(level)
	if err != nil || lvl == zerolog.NoLevel {
		return zerolog.Nop(), usagef(fmt.Sprintf("--log-level %q: want trace, debug, info, warn, error or disabled", level))
	}
	switch format {
	case "", "json":
	case "console":
		// Colours only on a terminal (and never with NO_COLOR set): a
		// file or a pipe gets plain text.
		w = zerolog.ConsoleWriter{Out: w, TimeFormat: time.RFC3339, NoColor: !isTerminal(w) || os.Getenv("NO_COLOR") != ""}
	default:
		return zerolog.Nop(), usagef(fmt.Sprintf("--log-format %q: want json or console", format))
	}
	return zerolog.New(w).Level(lvl).With().Timestamp().Logger(), nil
}

// apply registers one mesh on b; handlers are the built-in ones.
// defaultSecret and defaultTLS apply unless the mesh names its own.
func (m *meshConfig) apply(b *routemesh.MeshBuilder, bi *builtins, defaultSecret []byte, defaultTLS *tlsFiles) error {
	if m.Listen != "" {
		ep, err := tcpEndpoint("--listen", m.Listen)
		if err != nil {
			return err
		}
		b.Listen(ep)
	}
	if m.Advertise != "" {
		b.SetAdvertiseHost(m.Advertise)
	}
	if m.RID != "" {
		b.SetRoutingID(m.RID)
	}
	if m.RIDPrefix != "" {
		b.SetRoutingIDPrefix(m.RIDPrefix)
	}
	for _, p := range m.Peers {
		pc, err := parsePeer(p)
		if err != nil {
			return err
		}
		b.AddPeer(pc.Endpoint, pc.ExpectRID)
	}
	role, err := parseObjectRole(m.Object)
	if err != nil {
		return err
	}
	b.SetObjectRole(role)
	switch role {
	case routemesh.ObjectServer:
		// An Object Server hosts the built-in counter kind.
		spot.Enable(b, counter.Kind())
	case routemesh.ObjectClient:
		spot.Enable(b)
	}
	secret := defaultSecret
	if m.SecretFile != "" {
		if secret, err = readSecret(m.SecretFile); err != nil {
			return err
		}
	}
	if secret != nil {
		b.SetTrust(routemesh.TrustConfig{Secret: secret})
	}
	files := defaultTLS
	if m.TLS != nil {
		files = m.TLS
	}
	tc, err := files.config()
	if err != nil {
		return err
	}
	if tc != nil {
		b.SetTLS(*tc)
	}
	if m.HandlerConcurrency > 0 {
		b.SetHandlerConcurrency(m.HandlerConcurrency)
	}
	b.SetTimeouts(m.DrainTimeout, m.ShutdownTimeout)
	if l := m.Liveness; l != nil {
		b.ConfigureLiveness(routemesh.LivenessConfig{Interval: l.Interval, MaxGap: l.MaxGap, LastHeard: l.LastHeard})
	}
	if s := m.Socket; s != nil {
		b.ConfigureRouterSocket(routemesh.SocketConfig{
			SendHWM: s.SendHWM, ReceiveHWM: s.ReceiveHWM,
			MailboxMessageBudget: s.MailboxMessages, MailboxByteBudget: s.MailboxBytes,
			SendTimeout: s.SendTimeout, ReceiveTimeout: s.ReceiveTimeout,
		})
	}
	for _, s := range m.Servers {
		sb := b.Channel(s.Channel).Server()
		if s.Weight != nil {
			sb.SetWeight(*s.Weight)
		}
		if s.Concurrency > 0 {
			sb.SetConcurrency(s.Concurrency)
		}
		bi.register(sb, s.Channel)
	}
	for _, c := range m.Clients {
		b.Channel(c).Client()
	}
	return nil
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// lineValue prints a name as one field of a key=value line: as it is when
// it is printable and holds no space, quote, backslash or comma; else
// quoted, with control characters, spaces and non-printable runes escaped
// (\n, \x20, \u00a0…), so a name can neither break the line nor fake a
// field.
func lineValue(s string) string {
	plain := utf8.ValidString(s)
	for _, r := range s {
		if !plain || !unicode.IsGraphic(r) || unicode.IsSpace(r) || strings.ContainsRune(`"\,`, r) {
			plain = false
			break
		}
	}
	if plain {
		return s
	}
	return strings.ReplaceAll(strconv.Quote(s), " ", `\x20`)
}
