package protocol

import (
	"encoding/base64"

	"google.golang.org/protobuf/proto"

	pluginv1 "github.com/stewardhq/steward/proto/steward/plugin/v1"
)

// EncodePrincipal is the HeaderPrincipal form of a principal on the data
// socket: the protobuf message, base64url without padding, so it is a safe
// header value.
func EncodePrincipal(p *pluginv1.Principal) (string, error) {
	b, err := proto.Marshal(p)
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// DecodePrincipal reverses EncodePrincipal.
func DecodePrincipal(s string) (*pluginv1.Principal, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, err
	}
	var p pluginv1.Principal
	if err := proto.Unmarshal(b, &p); err != nil {
		return nil, err
	}
	return &p, nil
}
