package fs_test

import (
	"encoding/json"
	"syscall"
)

var jsonMarshal = json.Marshal

func mkfifo(p string) error { return syscall.Mkfifo(p, 0o644) }
