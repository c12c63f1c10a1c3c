package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
)

// Records are JSON, written and read by the codec in this file rather than
// by encoding/json, for two reasons. Reading must be strict: a record with
// a missing field, an unknown field, a field given twice, or null where the
// type holds no null is refused, because encoding/json would quietly take
// a missing field as its zero value, which for a record means inventing
// state. And reading must be one pass over the bytes, because state.json
// of a run of ten thousand jobs is read at every step. Writing is compact,
// with fields in their declared order and map keys sorted, so equal records
// are equal bytes, and an empty list is written [] rather than null, so
// that what is written is always read back.
//
// A record's Go type may hold structs (every exported field with a json
// name is required), pointers (null is nil), maps with string keys, slices,
// strings, bools, integers and json.RawMessage (any JSON value, kept as
// written).

// encode renders a record the way every record is stored: compact JSON with
// a final newline.
func encode(v any) ([]byte, error) { return encodeSized(v, 1024) }

// encodeSized is encode with room for size bytes at first: a record of
// megabytes is not grown a quarter at a time.
func encodeSized(v any, size int) ([]byte, error) {
	e := encoder{buf: make([]byte, 0, size)}
	if err := e.value(reflect.ValueOf(v)); err != nil {
		return nil, err
	}
	return append(e.buf, '\n'), nil
}

type encoder struct{ buf []byte }

// mapEntry is a map's key and value, for writing them in key order.
type mapEntry struct {
	key   string
	value reflect.Value
}

func (e *encoder) value(v reflect.Value) error {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			e.buf = append(e.buf, "null"...)
			return nil
		}
		return e.value(v.Elem())
	case reflect.Struct:
		e.buf = append(e.buf, '{')
		for i, f := range fieldsOf(v.Type()).list {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			e.buf = append(e.buf, f.quoted...)
			if err := e.value(v.Field(f.index)); err != nil {
				return err
			}
		}
		e.buf = append(e.buf, '}')
	case reflect.Map:
		entries := make([]mapEntry, 0, v.Len())
		for it := v.MapRange(); it.Next(); {
			entries = append(entries, mapEntry{it.Key().String(), it.Value()})
		}
		slices.SortFunc(entries, func(a, b mapEntry) int { return strings.Compare(a.key, b.key) })
		e.buf = append(e.buf, '{')
		for i, me := range entries {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			e.string(me.key)
			e.buf = append(e.buf, ':')
			if err := e.value(me.value); err != nil {
				return err
			}
		}
		e.buf = append(e.buf, '}')
	case reflect.Slice:
		if v.Type() == rawMessage {
			raw := v.Bytes()
			if len(raw) == 0 {
				raw = []byte("null")
			}
			if !json.Valid(raw) {
				return errors.New("encode record: a raw JSON value is not JSON")
			}
			e.buf = append(e.buf, raw...)
			return nil
		}
		e.buf = append(e.buf, '[')
		for i := range v.Len() {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			if err := e.value(v.Index(i)); err != nil {
				return err
			}
		}
		e.buf = append(e.buf, ']')
	case reflect.String:
		e.string(v.String())
	case reflect.Bool:
		e.buf = strconv.AppendBool(e.buf, v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		e.buf = strconv.AppendInt(e.buf, v.Int(), 10)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		e.buf = strconv.AppendUint(e.buf, v.Uint(), 10)
	default:
		return fmt.Errorf("encode record: a %s cannot be stored", v.Type())
	}
	return nil
}

// string writes s as a JSON string.
func (e *encoder) string(s string) { e.buf = appendString(e.buf, s) }

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string: control characters, quotes and
// backslashes escaped, and nothing else, so that text reads as it is.
// Invalid UTF-8 is written as U+FFFD, which the decoder then reads back
// unchanged.
func appendString(buf []byte, s string) []byte {
	buf = append(buf, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				buf = append(buf, s[start:i]...)
				buf = append(buf, "\ufffd"...)
				i += size
				start = i
				continue
			}
			i += size
			continue
		}
		if c >= 0x20 && c != '"' && c != '\\' {
			i++
			continue
		}
		buf = append(buf, s[start:i]...)
		switch c {
		case '"', '\\':
			buf = append(buf, '\\', c)
		case '\n':
			buf = append(buf, '\\', 'n')
		case '\r':
			buf = append(buf, '\\', 'r')
		case '\t':
			buf = append(buf, '\\', 't')
		default:
			buf = append(buf, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		i++
		start = i
	}
	buf = append(buf, s[start:]...)
	return append(buf, '"')
}

// fields is what the codec knows of a struct type: its stored fields in
// declared order, and by name.
type fields struct {
	list   []field
	byName map[string]int // name → position in list
}

type field struct {
	name   string
	index  int    // in the struct
	quoted []byte // the name as a key: "name":
}

var fieldCache sync.Map // reflect.Type → *fields

func fieldsOf(t reflect.Type) *fields {
	if f, ok := fieldCache.Load(t); ok {
		return f.(*fields)
	}
	fs := &fields{byName: map[string]int{}}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fs.byName[name] = len(fs.list)
		fs.list = append(fs.list, field{name: name, index: i, quoted: append(appendString(nil, name), ':')})
	}
	actual, _ := fieldCache.LoadOrStore(t, fs)
	return actual.(*fields)
}

var rawMessage = reflect.TypeFor[json.RawMessage]()

// decodeStrict decodes data, one JSON value, into v, a pointer, refusing
// anything it does not fully understand. The strings it decodes without
// escapes are parts of one copy of data: a state of ten thousand jobs
// holds some fifty thousand strings, which would otherwise be as many
// allocations.
func decodeStrict(data []byte, v any) error { return decodeOlder(data, v, nil) }

// decodeOlder is decodeStrict for a record of an older format, which lacks
// the fields lacks names by struct type: each must be missing, and is read
// as its zero value, what the custodian that wrote it knew. A field it
// lacks that is there makes it no record of that format.
func decodeOlder(data []byte, v any, lacks map[reflect.Type][]string) error {
	d := decoder{data: data, text: string(data), lacks: lacks}
	d.space()
	if err := d.value(reflect.ValueOf(v).Elem()); err != nil {
		return err
	}
	d.space()
	if d.pos != len(d.data) {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}

type decoder struct {
	data []byte
	text string // data, copied once, for the strings decoded
	pos  int
	// scratch is space for unescaping a string, so that reading one does
	// not allocate unless it is kept.
	scratch []byte
	// path is where the value being read lies, for an error to name; it is
	// put into words only when there is an error.
	path []pathStep
	// lacks names, by struct type, the fields a record of an older format
	// lacks (decodeOlder).
	lacks map[reflect.Type][]string
}

// pathStep is one step of the way to a value: a struct's field, a map's
// key or a list's index.
type pathStep struct {
	name  string // a field's or a key's
	index int    // a list's, when name is ""
	key   bool
}

// at names the value being read: record.jobs["a"].input.files[0].
func (d *decoder) at() string {
	b := []byte("record")
	for _, p := range d.path {
		switch {
		case p.key:
			b = fmt.Appendf(b, "[%q]", p.name)
		case p.name != "":
			b = append(append(b, '.'), p.name...)
		default:
			b = fmt.Appendf(b, "[%d]", p.index)
		}
	}
	return string(b)
}

func (d *decoder) push(p pathStep) { d.path = append(d.path, p) }
func (d *decoder) pop()            { d.path = d.path[:len(d.path)-1] }

// maxDepth bounds how deeply records nest; a record of this engine nests a
// few levels, and a forged one may not exhaust the stack.
const maxDepth = 64

func (d *decoder) errorf(format string, args ...any) error {
	return fmt.Errorf("at byte %d: "+format, append([]any{d.pos}, args...)...)
}

func (d *decoder) space() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

func (d *decoder) peek() byte {
	if d.pos < len(d.data) {
		return d.data[d.pos]
	}
	return 0
}

// literal consumes the word w (null, true, false).
func (d *decoder) literal(w string) bool {
	if bytes.HasPrefix(d.data[d.pos:], []byte(w)) {
		d.pos += len(w)
		return true
	}
	return false
}

func (d *decoder) value(v reflect.Value) error {
	return d.valueDepth(v, 0)
}

func (d *decoder) valueDepth(v reflect.Value, depth int) error {
	if depth > maxDepth {
		return d.errorf("%s nests too deeply", d.at())
	}
	d.space()
	if d.peek() == 'n' {
		if !d.literal("null") {
			return d.errorf("%s is not JSON", d.at())
		}
		switch {
		case v.Kind() == reflect.Pointer:
			v.SetZero()
			return nil
		case v.Type() == rawMessage:
			v.SetBytes([]byte("null"))
			return nil
		}
		return fmt.Errorf("%s is null", d.at())
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		return d.valueDepth(v.Elem(), depth+1)
	case reflect.Struct:
		return d.object(v, depth)
	case reflect.Map:
		return d.mapping(v, depth)
	case reflect.Slice:
		if v.Type() == rawMessage {
			start := d.pos
			if err := d.skip(depth); err != nil {
				return err
			}
			v.SetBytes(slices.Clone(d.data[start:d.pos]))
			return nil
		}
		return d.list(v, depth)
	case reflect.String:
		s, err := d.str()
		if err != nil {
			return err
		}
		v.SetString(s)
	case reflect.Bool:
		switch {
		case d.literal("true"):
			v.SetBool(true)
		case d.literal("false"):
			v.SetBool(false)
		default:
			return fmt.Errorf("%s is not true or false", d.at())
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := d.integer()
		if err != nil {
			return err
		}
		if v.OverflowInt(n) {
			return fmt.Errorf("%s is out of range", d.at())
		}
		v.SetInt(n)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, err := d.integer()
		if err != nil {
			return err
		}
		if n < 0 || v.OverflowUint(uint64(n)) {
			return fmt.Errorf("%s is out of range", d.at())
		}
		v.SetUint(uint64(n))
	default:
		return fmt.Errorf("%s: a %s cannot be read", d.at(), v.Type())
	}
	return nil
}

func (d *decoder) object(v reflect.Value, depth int) error {
	if d.peek() != '{' {
		return fmt.Errorf("%s is not an object", d.at())
	}
	d.pos++
	fs := fieldsOf(v.Type())
	seen := make([]bool, len(fs.list))
	first := true
	for {
		d.space()
		if d.peek() == '}' && first {
			d.pos++
			break
		}
		key, err := d.key()
		if err != nil {
			return err
		}
		i, ok := fs.byName[string(key)]
		if !ok || slices.Contains(d.lacks[v.Type()], string(key)) {
			return fmt.Errorf("%s has an unknown field %q", d.at(), key)
		}
		if seen[i] {
			return fmt.Errorf("%s has the field %q twice", d.at(), key)
		}
		seen[i] = true
		f := fs.list[i]
		d.push(pathStep{name: f.name})
		if err := d.valueDepth(v.Field(f.index), depth+1); err != nil {
			return err
		}
		d.pop()
		if done, err := d.next('}'); err != nil || done {
			if err != nil {
				return err
			}
			break
		}
		first = false
	}
	for i := range fs.list {
		if !seen[i] && !slices.Contains(d.lacks[v.Type()], fs.list[i].name) {
			return fmt.Errorf("%s has no field %q", d.at(), fs.list[i].name)
		}
	}
	return nil
}

func (d *decoder) mapping(v reflect.Value, depth int) error {
	if d.peek() != '{' {
		return fmt.Errorf("%s is not an object", d.at())
	}
	d.pos++
	m := reflect.MakeMap(v.Type())
	d.space()
	if d.peek() == '}' {
		d.pos++
		v.Set(m)
		return nil
	}
	if err := d.entries(m, depth); err != nil {
		return err
	}
	v.Set(m)
	return nil
}

// entries reads a map's entries into m, from the first key to the closing
// brace.
func (d *decoder) entries(m reflect.Value, depth int) error {
	t := m.Type()
	key := reflect.New(t.Key()).Elem()
	elem := reflect.New(t.Elem()).Elem()
	for {
		name, err := d.keyString()
		if err != nil {
			return err
		}
		key.SetString(name)
		if m.MapIndex(key).IsValid() {
			return fmt.Errorf("%s has the key %q twice", d.at(), name)
		}
		elem.SetZero()
		d.push(pathStep{name: name, key: true})
		if err := d.valueDepth(elem, depth+1); err != nil {
			return err
		}
		d.pop()
		m.SetMapIndex(key, elem)
		if done, err := d.next('}'); err != nil || done {
			return err
		}
	}
}

func (d *decoder) list(v reflect.Value, depth int) error {
	if d.peek() != '[' {
		return fmt.Errorf("%s is not a list", d.at())
	}
	d.pos++
	d.space()
	if d.peek() == ']' {
		d.pos++
		v.Set(reflect.MakeSlice(v.Type(), 0, 0))
		return nil
	}
	// Grown in place: v is a field or a map's element, so addressable.
	v.SetZero()
	for i := 0; ; i++ {
		if i == v.Cap() {
			v.Grow(max(1, i))
		}
		v.SetLen(i + 1)
		d.push(pathStep{index: i})
		if err := d.valueDepth(v.Index(i), depth+1); err != nil {
			return err
		}
		d.pop()
		done, err := d.next(']')
		if err != nil {
			return err
		}
		if done {
			break
		}
	}
	return nil
}

// next consumes a comma, or the closing byte: done.
func (d *decoder) next(closing byte) (done bool, err error) {
	d.space()
	switch d.peek() {
	case ',':
		d.pos++
		return false, nil
	case closing:
		d.pos++
		return true, nil
	}
	return false, d.errorf("%s: expected ',' or %q", d.at(), closing)
}

// key reads an object's key and its colon. The bytes returned are valid
// until the next read.
func (d *decoder) key() ([]byte, error) {
	d.space()
	if d.peek() != '"' {
		return nil, d.errorf("%s: expected a key", d.at())
	}
	raw, err := d.strBytes()
	if err != nil {
		return nil, err
	}
	if err := d.colon(); err != nil {
		return nil, fmt.Errorf("%w %q", err, raw)
	}
	return raw, nil
}

// keyString reads a map's key, to keep, and its colon.
func (d *decoder) keyString() (string, error) {
	d.space()
	if d.peek() != '"' {
		return "", d.errorf("%s: expected a key", d.at())
	}
	s, err := d.str()
	if err != nil {
		return "", err
	}
	if err := d.colon(); err != nil {
		return "", fmt.Errorf("%w %q", err, s)
	}
	return s, nil
}

// colon consumes the colon after a key; the error wants the key after it.
func (d *decoder) colon() error {
	d.space()
	if d.peek() != ':' {
		return d.errorf("%s: expected ':' after key", d.at())
	}
	d.pos++
	return nil
}

// str reads a JSON string to keep: without escapes, a part of the
// record's text; with them, a string of its own.
func (d *decoder) str() (string, error) {
	start := d.pos + 1
	raw, err := d.strBytes()
	if err != nil {
		return "", err
	}
	if d.pos-1-start == len(raw) {
		return d.text[start : d.pos-1], nil
	}
	return string(raw), nil
}

// strBytes reads a JSON string. Without escapes it returns the bytes in
// place; with them, it unescapes into scratch space.
func (d *decoder) strBytes() ([]byte, error) {
	if d.peek() != '"' {
		return nil, fmt.Errorf("%s is not a string", d.at())
	}
	d.pos++
	start := d.pos
	for d.pos < len(d.data) {
		c := d.data[d.pos]
		switch {
		case c == '"':
			s := d.data[start:d.pos]
			d.pos++
			if !utf8.Valid(s) {
				return nil, fmt.Errorf("%s is not valid UTF-8", d.at())
			}
			return s, nil
		case c == '\\':
			return d.escaped(start)
		case c < 0x20:
			return nil, d.errorf("%s has a control character in a string", d.at())
		}
		d.pos++
	}
	return nil, d.errorf("%s: a string is not closed", d.at())
}

func (d *decoder) escaped(start int) ([]byte, error) {
	out := append(d.scratch[:0], d.data[start:d.pos]...)
	for d.pos < len(d.data) {
		c := d.data[d.pos]
		switch {
		case c == '"':
			d.pos++
			d.scratch = out
			if !utf8.Valid(out) {
				return nil, fmt.Errorf("%s is not valid UTF-8", d.at())
			}
			return out, nil
		case c < 0x20:
			return nil, d.errorf("%s has a control character in a string", d.at())
		case c != '\\':
			out = append(out, c)
			d.pos++
			continue
		}
		if d.pos+1 >= len(d.data) {
			break
		}
		d.pos += 2
		switch e := d.data[d.pos-1]; e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := d.hex4()
			if !ok {
				return nil, d.errorf("%s has a bad \\u escape", d.at())
			}
			if utf16.IsSurrogate(r) {
				r2 := utf8.RuneError
				if d.pos+1 < len(d.data) && d.data[d.pos] == '\\' && d.data[d.pos+1] == 'u' {
					d.pos += 2
					if low, ok := d.hex4(); ok {
						r2 = low
					}
				}
				r = utf16.DecodeRune(r, r2)
			}
			out = utf8.AppendRune(out, r)
		default:
			return nil, d.errorf("%s has a bad escape", d.at())
		}
	}
	return nil, d.errorf("%s: a string is not closed", d.at())
}

func (d *decoder) hex4() (rune, bool) {
	if d.pos+4 > len(d.data) {
		return 0, false
	}
	n, err := strconv.ParseUint(string(d.data[d.pos:d.pos+4]), 16, 16)
	if err != nil {
		return 0, false
	}
	d.pos += 4
	return rune(n), true
}

// integer reads a JSON number that is a whole number.
func (d *decoder) integer() (int64, error) {
	start := d.pos
	if d.peek() == '-' {
		d.pos++
	}
	digits := d.pos
	for d.pos < len(d.data) && d.data[d.pos] >= '0' && d.data[d.pos] <= '9' {
		d.pos++
	}
	if d.pos == digits {
		return 0, fmt.Errorf("%s is not a number", d.at())
	}
	if d.data[digits] == '0' && d.pos-digits > 1 {
		return 0, fmt.Errorf("%s is a number with a leading zero", d.at())
	}
	switch d.peek() {
	case '.', 'e', 'E':
		return 0, fmt.Errorf("%s is not a whole number", d.at())
	}
	n, err := strconv.ParseInt(string(d.data[start:d.pos]), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s is out of range", d.at())
	}
	return n, nil
}

// skip consumes any JSON value, checking its syntax.
func (d *decoder) skip(depth int) error {
	if depth > maxDepth {
		return d.errorf("%s nests too deeply", d.at())
	}
	d.space()
	switch c := d.peek(); {
	case c == '{' || c == '[':
		closing := byte('}')
		if c == '[' {
			closing = ']'
		}
		d.pos++
		d.space()
		if d.peek() == closing {
			d.pos++
			return nil
		}
		for {
			if c == '{' {
				if _, err := d.key(); err != nil {
					return err
				}
			}
			if err := d.skip(depth + 1); err != nil {
				return err
			}
			done, err := d.next(closing)
			if err != nil {
				return err
			}
			if done {
				return nil
			}
		}
	case c == '"':
		_, err := d.strBytes()
		return err
	case c == 't' && d.literal("true"), c == 'f' && d.literal("false"), c == 'n' && d.literal("null"):
		return nil
	case c == '-' || c >= '0' && c <= '9':
		start := d.pos
		for d.pos < len(d.data) && strings.IndexByte("+-0123456789.eE", d.data[d.pos]) >= 0 {
			d.pos++
		}
		if !json.Valid(d.data[start:d.pos]) {
			return d.errorf("%s has a bad number", d.at())
		}
		if f, err := strconv.ParseFloat(string(d.data[start:d.pos]), 64); err != nil || math.IsInf(f, 0) {
			return d.errorf("%s has a number out of range", d.at())
		}
		return nil
	}
	return d.errorf("%s is not JSON", d.at())
}
