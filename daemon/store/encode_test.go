package store

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	fastjson "github.com/segmentio/encoding/json"

	"github.com/tackle-agent/tackle/daemon/event"
	"github.com/tackle-agent/tackle/daemon/tool"
)

// fill sets every field reachable from v to a value that is not zero, the
// strings to s: a field added to an event later is covered too.
func fill(v reflect.Value, s string) {
	switch v.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), s)
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(time.Date(2026, 12, 2, 13, 4, 5, 123456789, time.FixedZone("x", 3600))))
			return
		}
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), s)
			}
		}
	case reflect.Slice:
		if v.Type() == reflect.TypeFor[json.RawMessage]() {
			q, _ := json.Marshal(s)
			v.SetBytes([]byte(`{"k": [1, 2.5e3, ` + string(q) + `, null, true], "n": {}}`))
			return
		}
		if v.Type().Elem().Kind() == reflect.Uint8 {
			v.SetBytes([]byte(s))
			return
		}
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := 0; i < 2; i++ {
			fill(v.Index(i), s)
		}
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k, s)
		fill(e, s)
		v.SetMapIndex(k, e)
	case reflect.String:
		v.SetString(s)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(-1234567)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(1234567)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(0.000012345)
	}
}

// The session log encodes events and read-states with a faster encoder
// than encoding/json's: it must write the very same bytes.
func TestLogEncodingIsEncodingJSONs(t *testing.T) {
	strs := []string{"plain", "<html> & \u2028\u2029 \"quoted\" \\ \t\n\r \x00\x1f", "invalid \xff\xfe utf-8", "é 日本 😀", ""}
	for _, s := range strs {
		var e event.Event
		fill(reflect.ValueOf(&e).Elem(), s)
		e.Type = event.CallResult
		var fs tool.FileState
		fill(reflect.ValueOf(&fs).Elem(), s)
		for _, v := range []any{&e, fs, &event.Event{Seq: 1, Type: event.TurnEnded}} {
			var want, got bytes.Buffer
			if err := json.NewEncoder(&want).Encode(v); err != nil {
				t.Fatal(err)
			}
			if err := fastjson.NewEncoder(&got).Encode(v); err != nil {
				t.Fatal(err)
			}
			if got.String() != want.String() {
				t.Errorf("%T with %q:\n got %s\nwant %s", v, s, got.Bytes(), want.Bytes())
			}
		}
	}
}
