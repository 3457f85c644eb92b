package server

import (
	_ "embed"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/reflection"
	v1reflectiongrpc "google.golang.org/grpc/reflection/grpc_reflection_v1"
	v1alphareflectiongrpc "google.golang.org/grpc/reflection/grpc_reflection_v1alpha"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
)

// protoImage is tackle's proto files with their comments (a buf image, a
// FileDescriptorSet on the wire), written by `make generate`. The
// descriptors compiled into gen/ have no comments; reflection serves these,
// so `grpcurl describe` shows the API's documentation.
//
//go:embed tackle.binpb
var protoImage []byte

// registerReflection serves gRPC reflection (v1 and v1alpha) on g with
// the documented descriptors, falling back to the compiled ones for the
// services tackle does not define (health, reflection). The documented
// ones are built at the first reflection request: they are megabytes of
// heap a daemon that nobody inspects would keep for good.
func registerReflection(g *grpc.Server, log interface{ Warn(string, ...any) }) {
	resolver := lazyFiles(sync.OnceValue(func() protodesc.Resolver { return documentedFiles(log) }))
	opts := reflection.ServerOptions{Services: g, DescriptorResolver: resolver}
	v1reflectiongrpc.RegisterServerReflectionServer(g, reflection.NewServerV1(opts))
	v1alphareflectiongrpc.RegisterServerReflectionServer(g, reflection.NewServer(opts))
}

// documentedFiles resolves with the embedded image first, the compiled
// descriptors after; only the compiled ones when the image is broken.
func documentedFiles(log interface{ Warn(string, ...any) }) protodesc.Resolver {
	var set descriptorpb.FileDescriptorSet
	if err := proto.Unmarshal(protoImage, &set); err != nil {
		log.Warn("reflection serves descriptors without comments: the embedded proto image does not decode", "err", err)
		return protoregistry.GlobalFiles
	}
	files, err := protodesc.NewFiles(&set)
	if err != nil {
		log.Warn("reflection serves descriptors without comments: the embedded proto image does not resolve", "err", err)
		return protoregistry.GlobalFiles
	}
	return layeredFiles{files, protoregistry.GlobalFiles}
}

// lazyFiles is the resolver its function returns (once).
type lazyFiles func() protodesc.Resolver

func (l lazyFiles) FindFileByPath(path string) (protoreflect.FileDescriptor, error) {
	return l().FindFileByPath(path)
}

func (l lazyFiles) FindDescriptorByName(name protoreflect.FullName) (protoreflect.Descriptor, error) {
	return l().FindDescriptorByName(name)
}

// layeredFiles looks a descriptor up in each resolver in turn.
type layeredFiles []protodesc.Resolver

func (l layeredFiles) FindFileByPath(path string) (protoreflect.FileDescriptor, error) {
	var err error
	for _, r := range l {
		var fd protoreflect.FileDescriptor
		if fd, err = r.FindFileByPath(path); err == nil {
			return fd, nil
		}
	}
	return nil, err
}

func (l layeredFiles) FindDescriptorByName(name protoreflect.FullName) (protoreflect.Descriptor, error) {
	var err error
	for _, r := range l {
		var d protoreflect.Descriptor
		if d, err = r.FindDescriptorByName(name); err == nil {
			return d, nil
		}
	}
	return nil, err
}
