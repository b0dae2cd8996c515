package netstat

import "encoding/binary"

// littleEndian says how this machine orders a word's bytes.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1
