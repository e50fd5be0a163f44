package wire

import "math"

// BatchWriter encodes a Batch frame one envelope at a time, straight from
// wherever the sender keeps its envelopes (no gathering copy). The frame it
// produces decodes exactly as AppendFrame's; its envelope count is always
// written in the 16-bit form (patched by Finish), so a batch holds at most
// MaxBatchWriter envelopes.
//
// Usage: Reset, then Add each envelope, then Finish; the writer may be
// reused after Finish (its buffer is the caller's, returned by Finish).
type BatchWriter struct {
	e     encoder
	start int // where this frame starts in the buffer
	count int // offset of the count's 16-bit field
	n     int
}

// MaxBatchWriter is the most envelopes one BatchWriter frame holds.
const MaxBatchWriter = math.MaxUint16

// Reset starts a Batch frame appended to dst.
func (w *BatchWriter) Reset(dst []byte) {
	w.e = encoder{b: dst}
	w.start, w.n = len(dst), 0
	w.e.arrayHeader(frameFields)
	w.e.uint(uint64(ProtocolVersion))
	w.e.uint(uint64(FrameBatch))
	w.e.b = append(w.e.b, mpArray16, 0, 0)
	w.count = len(w.e.b) - 2
}

// Len is how many envelopes were added since Reset.
func (w *BatchWriter) Len() int { return w.n }

// Add appends env. An invalid Kind, or more than MaxBatchWriter envelopes,
// makes Finish fail.
func (w *BatchWriter) Add(env *Envelope) {
	if !env.Kind.valid() {
		if w.e.err == nil {
			w.e.err = &DecodeError{Offset: -1, Reason: "envelope: invalid kind"}
		}
		return
	}
	w.n++
	w.e.envelope(env)
}

// Finish completes the frame and returns the buffer with it appended, or
// the error of the first failed Add or of the frame's size (ErrTooLarge).
func (w *BatchWriter) Finish() ([]byte, error) {
	if w.n > MaxBatchWriter {
		w.e.tooLarge(w.n)
	}
	if w.e.err == nil && uint64(len(w.e.b)-w.start) > MaxFrameSize {
		w.e.err = &TooLargeError{Size: uint64(len(w.e.b) - w.start), Limit: MaxFrameSize}
	}
	b := w.e.b
	w.e.b = nil
	if w.e.err != nil {
		return b[:w.start], w.e.err
	}
	b[w.count], b[w.count+1] = byte(w.n>>8), byte(w.n)
	return b, nil
}
