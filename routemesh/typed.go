package routemesh

import (
	"context"

	"github.com/zlink-go/zlink/wire"
)

// Typed helpers: application code handles JoinMatch → JoinResult without
// touching bytes. Payloads are msgpack through wire.Packet; a payload that
// does not decode into the packet's type ends the call with ErrBadPayload.

// OnRequest registers a typed request handler on a Server channel.
func OnRequest[Req, Resp any](s *ServerBuilder, p wire.Packet[Req, Resp], h func(c *Context, req Req) (Resp, error)) *ServerBuilder {
	return s.HandleRequest(p.Name(), typedRequest(p, h))
}

// OnSend registers a typed one-way handler on a Server channel.
func OnSend[Msg, Unused any](s *ServerBuilder, p wire.Packet[Msg, Unused], h func(c *Context, msg Msg)) *ServerBuilder {
	return s.HandleSend(p.Name(), typedSend(p, h))
}

// OnDirectRequest registers a typed Node-direct request handler.
func OnDirectRequest[Req, Resp any](b *MeshBuilder, p wire.Packet[Req, Resp], h func(c *Context, req Req) (Resp, error)) *MeshBuilder {
	return b.HandleDirectRequest(p.Name(), typedRequest(p, h))
}

// OnDirectSend registers a typed Node-direct one-way handler.
func OnDirectSend[Msg, Unused any](b *MeshBuilder, p wire.Packet[Msg, Unused], h func(c *Context, msg Msg)) *MeshBuilder {
	return b.HandleDirectSend(p.Name(), typedSend(p, h))
}

func typedRequest[Req, Resp any](p wire.Packet[Req, Resp], h func(*Context, Req) (Resp, error)) RequestHandler {
	return func(c *Context, payload []byte) ([]byte, error) {
		req, err := p.DecodeRequest(payload)
		if err != nil {
			return nil, err
		}
		resp, err := h(c, req)
		if err != nil {
			return nil, err
		}
		return p.EncodeReply(resp)
	}
}

func typedSend[Msg, Unused any](p wire.Packet[Msg, Unused], h func(*Context, Msg)) SendHandler {
	return func(c *Context, payload []byte) {
		msg, err := p.DecodeRequest(payload)
		if err != nil {
			return
		}
		h(c, msg)
	}
}

// Call is the typed select-one request on channel.
func Call[Req, Resp any](ctx context.Context, n *Node, channel string, p wire.Packet[Req, Resp], req Req) (Resp, error) {
	var zero Resp
	b, err := p.EncodeRequest(req)
	if err != nil {
		return zero, err
	}
	out, err := n.Call(ctx, channel, p.Name(), b)
	if err != nil {
		return zero, err
	}
	return p.DecodeReply(out)
}

// CallNode is the typed Node-direct request to rid.
func CallNode[Req, Resp any](ctx context.Context, n *Node, rid string, p wire.Packet[Req, Resp], req Req) (Resp, error) {
	var zero Resp
	b, err := p.EncodeRequest(req)
	if err != nil {
		return zero, err
	}
	out, err := n.CallNode(ctx, rid, p.Name(), b)
	if err != nil {
		return zero, err
	}
	return p.DecodeReply(out)
}

// Send is the typed select-one one-way message on channel.
func Send[Msg, Unused any](ctx context.Context, n *Node, channel string, p wire.Packet[Msg, Unused], msg Msg) error {
	b, err := p.EncodeRequest(msg)
	if err != nil {
		return err
	}
	return n.Send(ctx, channel, p.Name(), b)
}

// SendNode is the typed Node-direct one-way message to rid.
func SendNode[Msg, Unused any](ctx context.Context, n *Node, rid string, p wire.Packet[Msg, Unused], msg Msg) error {
	b, err := p.EncodeRequest(msg)
	if err != nil {
		return err
	}
	return n.SendNode(ctx, rid, p.Name(), b)
}

// TypedResult is one member's terminal result of a typed Multicast: its
// decoded reply, or its error.
type TypedResult[Resp any] struct {
	RID   string
	Reply Resp
	Err   error
}

// Multicast is the typed Logical Multicast on channel: every eligible
// remote Server member once, each member's result decoded (a reply that
// does not decode is that member's error).
func Multicast[Req, Resp any](ctx context.Context, n *Node, channel string, p wire.Packet[Req, Resp], req Req) ([]TypedResult[Resp], error) {
	b, err := p.EncodeRequest(req)
	if err != nil {
		return nil, err
	}
	raw, err := n.Multicast(ctx, channel, p.Name(), b)
	if err != nil {
		return nil, err
	}
	out := make([]TypedResult[Resp], len(raw))
	for i, r := range raw {
		out[i] = TypedResult[Resp]{RID: r.RID, Err: r.Err}
		if r.Err == nil {
			out[i].Reply, out[i].Err = p.DecodeReply(r.Reply)
		}
	}
	return out, nil
}
