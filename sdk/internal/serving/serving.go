// Package serving holds what sdk.Serve and sdk/plugintest both need to
// serve a plugin and a plugin author does not: the gRPC server with its
// interceptors, and the constructor of the Plugin service for a plugin's
// definition and factory, which package sdk registers here so that the
// harness runs the very server Serve runs without it being part of the
// SDK's API.
package serving

import (
	"context"
	"fmt"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/stewardhq/steward/sdk/protocol"
)

// NewGRPCPlugin returns the go-plugin plugin that serves a plugin built
// by factory, a func(context.Context, C, *sdk.Env) (*sdk.Plugin, error),
// from def, an sdk.Definition: its Impl is the Plugin service and its
// OnBroker hook hands that service the broker, over which it dials the
// Host service named in Configure. Its Impl is also an io.Closer that
// closes the data socket the service may have opened, for a process that
// outlives the plugin. The error lists the definition's mistakes, which
// sdk.Serve refuses too. Package sdk sets it when it is initialized; def
// and factory are untyped because this package cannot import sdk, which
// imports it.
var NewGRPCPlugin func(def, factory any, logger hclog.Logger) (*protocol.GRPCPlugin, error)

// GRPCServer returns the go-plugin GRPCServer factory of a plugin. It adds
// panic recovery, so that a handler's panic becomes an Internal error for
// that call instead of killing the plugin, and lets request messages be as
// large as the host sends.
func GRPCServer(logger hclog.Logger) func([]grpc.ServerOption) *grpc.Server {
	return func(opts []grpc.ServerOption) *grpc.Server {
		opts = append(opts,
			grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (resp any, err error) {
				defer recoverTo(logger, info.FullMethod, &err)
				return h(ctx, req)
			}),
			grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) (err error) {
				defer recoverTo(logger, info.FullMethod, &err)
				return h(srv, ss)
			}),
			grpc.MaxRecvMsgSize(16<<20),
		)
		return grpc.NewServer(opts...)
	}
}

func recoverTo(logger hclog.Logger, method string, err *error) {
	if r := recover(); r != nil {
		logger.Error("panic", "method", method, "panic", fmt.Sprint(r))
		*err = status.Errorf(codes.Internal, "plugin panic in %s", method)
	}
}
