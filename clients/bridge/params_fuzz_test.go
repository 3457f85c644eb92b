package bridge

import (
	"bytes"
	"encoding/json"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
)

// FuzzBridgeParams decodes the input as the params of a request: of the
// unary method or attach/* message chosen by which (every method is
// reachable). unmarshal either fails or gives a message that round-trips
// through protojson (what the bridge decoded is what tackled receives,
// whatever the client spelled); taking [] for {} (fixEmpty) changes
// nothing more when done again.
func FuzzBridgeParams(f *testing.F) {
	for i, s := range []string{
		`{}`, `[]`, `null`, ``, `{"sessionId":"s1","fromSeq":"5"}`, `{"cwd":"/tmp","env":[],"mcpConfig":[],"additionalDirectories":["/a"]}`,
		`{"sessionId":"s","calls":[{"id":"c1","name":"Read","inputJson":"{}"}],"permissionMode":"plan"}`, `{"requestId":"r","option":"allow_once","feedback":"x"}`,
		`{"session_id":"snake","from_seq":1}`, `{"images":[{"mediaType":"image/png","data":"AAEC"}],"files":[]}`, `{"unknownField":1}`, `{"sessionId":5}`,
		`{"a":[[],{}],"b":{"c":[]}}`, `{"fromSeq":"18446744073709551616"}`, `{"fromSeq":-1}`, `{"role":"ROLE_OBSERVER"}`, `{"role":99}`,
	} {
		f.Add([]byte(s), uint8(i))
	}
	ms, err := unary()
	if err != nil {
		f.Fatal(err)
	}
	names := methodNames(ms)
	// The attach/* messages: the oneof fields of ClientMessage but hello.
	var attach []protoreflect.MessageType
	cm := (&tacklev1.ClientMessage{}).ProtoReflect().Descriptor()
	for i := 0; i < cm.Fields().Len(); i++ {
		fd := cm.Fields().Get(i)
		if fd.ContainingOneof() == nil || fd.Message() == nil || fd.JSONName() == "hello" {
			continue
		}
		mt, err := protoregistry.GlobalTypes.FindMessageByName(fd.Message().FullName())
		if err != nil {
			f.Fatal(err)
		}
		attach = append(attach, mt)
	}
	f.Fuzz(func(t *testing.T, params []byte, which uint8) {
		var mt protoreflect.MessageType
		if n := int(which) % (len(names) + len(attach)); n < len(names) {
			mt = ms[names[n]].inType
		} else {
			mt = attach[n-len(names)]
		}
		m := mt.New().Interface()
		if err := unmarshal(params, m); err != nil {
			if err.Error() == "" {
				t.Fatal("an error without a message")
			}
			return
		}
		b, err := protojson.Marshal(m)
		if err != nil {
			t.Fatalf("%s: the decoded message does not encode: %v", mt.Descriptor().FullName(), err)
		}
		m2 := mt.New().Interface()
		if err := unmarshal(b, m2); err != nil {
			t.Fatalf("%s: its own encoding %s does not decode: %v", mt.Descriptor().FullName(), b, err)
		}
		if !proto.Equal(m, m2) {
			t.Fatalf("%s: round trip differs: %v vs %v", mt.Descriptor().FullName(), m, m2)
		}
		// fixEmpty is idempotent.
		var v any
		dec := json.NewDecoder(bytes.NewReader(params))
		dec.UseNumber()
		if dec.Decode(&v) == nil {
			once, _ := json.Marshal(fixEmpty(v, mt.Descriptor()))
			var w any
			d2 := json.NewDecoder(bytes.NewReader(once))
			d2.UseNumber()
			if err := d2.Decode(&w); err != nil {
				t.Fatalf("fixEmpty gave %s: %v", once, err)
			}
			twice, _ := json.Marshal(fixEmpty(w, mt.Descriptor()))
			if !bytes.Equal(once, twice) {
				t.Fatalf("fixEmpty is not idempotent: %s then %s", once, twice)
			}
		}
	})
}
