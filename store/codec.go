package store

import (
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
func encode(v any) ([]byte, error) {
	e := encoder{buf: make([]byte, 0, 1024)}
	if err := e.value(reflect.ValueOf(v)); err != nil {
		return nil, err
	}
	return append(e.buf, '\n'), nil
}

type encoder struct{ buf []byte }

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
			e.buf = strconv.AppendQuote(e.buf[:len(e.buf):len(e.buf)], "")[:len(e.buf)]
			e.buf = appendString(e.buf, f.name)
			e.buf = append(e.buf, ':')
			if err := e.value(v.Field(f.index)); err != nil {
				return err
			}
		}
		e.buf = append(e.buf, '}')
	case reflect.Map:
		keys := make([]string, 0, v.Len())
		for it := v.MapRange(); it.Next(); {
			keys = append(keys, it.Key().String())
		}
		slices.Sort(keys)
		e.buf = append(e.buf, '{')
		for i, k := range keys {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			e.buf = appendString(e.buf, k)
			e.buf = append(e.buf, ':')
			if err := e.value(v.MapIndex(reflect.ValueOf(k).Convert(v.Type().Key()))); err != nil {
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
		e.buf = appendString(e.buf, v.String())
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
	name  string
	index int // in the struct
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
		fs.list = append(fs.list, field{name: name, index: i})
	}
	actual, _ := fieldCache.LoadOrStore(t, fs)
	return actual.(*fields)
}

var rawMessage = reflect.TypeFor[json.RawMessage]()

// decodeStrict decodes data, one JSON value, into v, a pointer, refusing
// anything it does not fully understand.
func decodeStrict(data []byte, v any) error {
	d := decoder{data: data}
	d.space()
	if err := d.value(reflect.ValueOf(v).Elem(), "record"); err != nil {
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
	pos  int
	// keys is scratch space for map keys, so that reading one does not
	// allocate unless it is kept.
	scratch []byte
}

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
	if strings.HasPrefix(string(d.data[d.pos:min(len(d.data), d.pos+len(w))]), w) {
		d.pos += len(w)
		return true
	}
	return false
}

func (d *decoder) value(v reflect.Value, at string) error {
	return d.valueDepth(v, at, 0)
}

func (d *decoder) valueDepth(v reflect.Value, at string, depth int) error {
	if depth > maxDepth {
		return d.errorf("%s nests too deeply", at)
	}
	d.space()
	if d.peek() == 'n' {
		if !d.literal("null") {
			return d.errorf("%s is not JSON", at)
		}
		switch {
		case v.Kind() == reflect.Pointer:
			v.SetZero()
			return nil
		case v.Type() == rawMessage:
			v.SetBytes([]byte("null"))
			return nil
		}
		return fmt.Errorf("%s is null", at)
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		return d.valueDepth(v.Elem(), at, depth+1)
	case reflect.Struct:
		return d.object(v, at, depth)
	case reflect.Map:
		return d.mapping(v, at, depth)
	case reflect.Slice:
		if v.Type() == rawMessage {
			start := d.pos
			if err := d.skip(at, depth); err != nil {
				return err
			}
			v.SetBytes(slices.Clone(d.data[start:d.pos]))
			return nil
		}
		return d.list(v, at, depth)
	case reflect.String:
		s, err := d.str(at)
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
			return fmt.Errorf("%s is not true or false", at)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := d.integer(at)
		if err != nil {
			return err
		}
		if v.OverflowInt(n) {
			return fmt.Errorf("%s is out of range", at)
		}
		v.SetInt(n)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, err := d.integer(at)
		if err != nil {
			return err
		}
		if n < 0 || v.OverflowUint(uint64(n)) {
			return fmt.Errorf("%s is out of range", at)
		}
		v.SetUint(uint64(n))
	default:
		return fmt.Errorf("%s: a %s cannot be read", at, v.Type())
	}
	return nil
}

func (d *decoder) object(v reflect.Value, at string, depth int) error {
	if d.peek() != '{' {
		return fmt.Errorf("%s is not an object", at)
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
		key, err := d.key(at)
		if err != nil {
			return err
		}
		i, ok := fs.byName[string(key)]
		if !ok {
			return fmt.Errorf("%s has an unknown field %q", at, key)
		}
		if seen[i] {
			return fmt.Errorf("%s has the field %q twice", at, key)
		}
		seen[i] = true
		f := fs.list[i]
		if err := d.valueDepth(v.Field(f.index), at+"."+f.name, depth+1); err != nil {
			return err
		}
		if done, err := d.next('}', at); err != nil || done {
			if err != nil {
				return err
			}
			break
		}
		first = false
	}
	for i, ok := range seen {
		if !ok {
			return fmt.Errorf("%s has no field %q", at, fs.list[i].name)
		}
	}
	return nil
}

func (d *decoder) mapping(v reflect.Value, at string, depth int) error {
	if d.peek() != '{' {
		return fmt.Errorf("%s is not an object", at)
	}
	d.pos++
	t := v.Type()
	m := reflect.MakeMap(t)
	elem := reflect.New(t.Elem()).Elem()
	first := true
	for {
		d.space()
		if d.peek() == '}' && first {
			d.pos++
			break
		}
		raw, err := d.key(at)
		if err != nil {
			return err
		}
		key := reflect.ValueOf(string(raw)).Convert(t.Key())
		if m.MapIndex(key).IsValid() {
			return fmt.Errorf("%s has the key %q twice", at, raw)
		}
		elem.SetZero()
		if err := d.valueDepth(elem, fmt.Sprintf("%s[%q]", at, raw), depth+1); err != nil {
			return err
		}
		m.SetMapIndex(key, elem)
		if done, err := d.next('}', at); err != nil || done {
			if err != nil {
				return err
			}
			break
		}
		first = false
	}
	v.Set(m)
	return nil
}

func (d *decoder) list(v reflect.Value, at string, depth int) error {
	if d.peek() != '[' {
		return fmt.Errorf("%s is not a list", at)
	}
	d.pos++
	s := reflect.MakeSlice(v.Type(), 0, 0)
	d.space()
	if d.peek() == ']' {
		d.pos++
		v.Set(s)
		return nil
	}
	for i := 0; ; i++ {
		s = reflect.Append(s, reflect.Zero(v.Type().Elem()))
		if err := d.valueDepth(s.Index(i), fmt.Sprintf("%s[%d]", at, i), depth+1); err != nil {
			return err
		}
		done, err := d.next(']', at)
		if err != nil {
			return err
		}
		if done {
			break
		}
	}
	v.Set(s)
	return nil
}

// next consumes a comma, or the closing byte: done.
func (d *decoder) next(closing byte, at string) (done bool, err error) {
	d.space()
	switch d.peek() {
	case ',':
		d.pos++
		return false, nil
	case closing:
		d.pos++
		return true, nil
	}
	return false, d.errorf("%s: expected ',' or %q", at, closing)
}

// key reads an object's key and its colon. The bytes returned are valid
// until the next read.
func (d *decoder) key(at string) ([]byte, error) {
	d.space()
	if d.peek() != '"' {
		return nil, d.errorf("%s: expected a key", at)
	}
	raw, err := d.strBytes(at)
	if err != nil {
		return nil, err
	}
	d.space()
	if d.peek() != ':' {
		return nil, d.errorf("%s: expected ':' after key %q", at, raw)
	}
	d.pos++
	return raw, nil
}

func (d *decoder) str(at string) (string, error) {
	raw, err := d.strBytes(at)
	if err != nil {
		return "", err
	}
	return string(raw), nil
}

// strBytes reads a JSON string. Without escapes it returns the bytes in
// place; with them, it unescapes into scratch space.
func (d *decoder) strBytes(at string) ([]byte, error) {
	if d.peek() != '"' {
		return nil, fmt.Errorf("%s is not a string", at)
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
				return nil, fmt.Errorf("%s is not valid UTF-8", at)
			}
			return s, nil
		case c == '\\':
			return d.escaped(start, at)
		case c < 0x20:
			return nil, d.errorf("%s has a control character in a string", at)
		}
		d.pos++
	}
	return nil, d.errorf("%s: a string is not closed", at)
}

func (d *decoder) escaped(start int, at string) ([]byte, error) {
	out := append(d.scratch[:0], d.data[start:d.pos]...)
	for d.pos < len(d.data) {
		c := d.data[d.pos]
		switch {
		case c == '"':
			d.pos++
			d.scratch = out
			if !utf8.Valid(out) {
				return nil, fmt.Errorf("%s is not valid UTF-8", at)
			}
			return out, nil
		case c < 0x20:
			return nil, d.errorf("%s has a control character in a string", at)
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
				return nil, d.errorf("%s has a bad \\u escape", at)
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
			return nil, d.errorf("%s has a bad escape", at)
		}
	}
	return nil, d.errorf("%s: a string is not closed", at)
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
func (d *decoder) integer(at string) (int64, error) {
	start := d.pos
	if d.peek() == '-' {
		d.pos++
	}
	digits := d.pos
	for d.pos < len(d.data) && d.data[d.pos] >= '0' && d.data[d.pos] <= '9' {
		d.pos++
	}
	if d.pos == digits {
		return 0, fmt.Errorf("%s is not a number", at)
	}
	if d.data[digits] == '0' && d.pos-digits > 1 {
		return 0, fmt.Errorf("%s is a number with a leading zero", at)
	}
	switch d.peek() {
	case '.', 'e', 'E':
		return 0, fmt.Errorf("%s is not a whole number", at)
	}
	n, err := strconv.ParseInt(string(d.data[start:d.pos]), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s is out of range", at)
	}
	return n, nil
}

// skip consumes any JSON value, checking its syntax.
func (d *decoder) skip(at string, depth int) error {
	if depth > maxDepth {
		return d.errorf("%s nests too deeply", at)
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
				if _, err := d.key(at); err != nil {
					return err
				}
			}
			if err := d.skip(at, depth+1); err != nil {
				return err
			}
			done, err := d.next(closing, at)
			if err != nil {
				return err
			}
			if done {
				return nil
			}
		}
	case c == '"':
		_, err := d.strBytes(at)
		return err
	case c == 't' && d.literal("true"), c == 'f' && d.literal("false"), c == 'n' && d.literal("null"):
		return nil
	case c == '-' || c >= '0' && c <= '9':
		start := d.pos
		for d.pos < len(d.data) && strings.IndexByte("+-0123456789.eE", d.data[d.pos]) >= 0 {
			d.pos++
		}
		if !json.Valid(d.data[start:d.pos]) {
			return d.errorf("%s has a bad number", at)
		}
		if f, err := strconv.ParseFloat(string(d.data[start:d.pos]), 64); err != nil || math.IsInf(f, 0) {
			return d.errorf("%s has a number out of range", at)
		}
		return nil
	}
	return d.errorf("%s is not JSON", at)
}
