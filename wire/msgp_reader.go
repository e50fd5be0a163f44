package wire

import "github.com/zlink-go/zlink/internal/msgp"

// reader is the module's msgpack reader (internal/msgp; its first problem
// is a *DecodeError, which matches ErrProtocol). The decoders of frames
// and envelopes are its methods.
type reader struct {
	msgp.Reader
	maps *Maps // nil: every map decoded is a new one
}

func newReader(b []byte) reader { return reader{Reader: msgp.Reader{B: b}} }
