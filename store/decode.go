package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
)

// decodeStrict decodes data into v and refuses anything it does not fully
// understand: unknown fields, missing fields, null where a value is required,
// and trailing data. encoding/json alone would quietly take a missing field
// as its zero value, which for a record means inventing state.
func decodeStrict(data []byte, v any) error {
	var raw any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	if dec.More() {
		return errors.New("trailing data after the JSON value")
	}
	if err := checkShape(raw, reflect.TypeOf(v).Elem(), "record"); err != nil {
		return err
	}
	dec = json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// checkShape walks a decoded JSON value beside the Go type it must fill and
// reports the first field that is missing, unknown or null where the type
// cannot hold null. Type mismatches are left to encoding/json.
func checkShape(raw any, t reflect.Type, at string) error {
	if t == rawMessage {
		return nil // any JSON value; its reader checks it
	}
	if raw == nil {
		switch t.Kind() {
		case reflect.Pointer, reflect.Interface, reflect.Slice, reflect.Map:
			return nil
		}
		return fmt.Errorf("%s is null", at)
	}
	switch t.Kind() {
	case reflect.Pointer:
		return checkShape(raw, t.Elem(), at)
	case reflect.Struct:
		obj, ok := raw.(map[string]any)
		if !ok {
			return fmt.Errorf("%s is not an object", at)
		}
		known := map[string]bool{}
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if !f.IsExported() || name == "-" {
				continue
			}
			if name == "" {
				name = f.Name
			}
			known[name] = true
			value, present := obj[name]
			if !present {
				return fmt.Errorf("%s has no field %q", at, name)
			}
			if err := checkShape(value, f.Type, at+"."+name); err != nil {
				return err
			}
		}
		for name := range obj {
			if !known[name] {
				return fmt.Errorf("%s has an unknown field %q", at, name)
			}
		}
	case reflect.Slice:
		list, ok := raw.([]any)
		if !ok {
			return fmt.Errorf("%s is not a list", at)
		}
		for i, item := range list {
			if err := checkShape(item, t.Elem(), fmt.Sprintf("%s[%d]", at, i)); err != nil {
				return err
			}
		}
	case reflect.Map:
		obj, ok := raw.(map[string]any)
		if !ok {
			return fmt.Errorf("%s is not an object", at)
		}
		for k, item := range obj {
			if err := checkShape(item, t.Elem(), fmt.Sprintf("%s[%q]", at, k)); err != nil {
				return err
			}
		}
	}
	return nil
}

// decodeLines decodes a JSON-lines record, one strict record a line, each
// of format want. A last line without its newline is incomplete: the
// record was cut short.
func decodeLines[T any](path string, data []byte, want int, format func(*T) int) ([]T, error) {
	if len(data) > 0 && data[len(data)-1] != '\n' {
		return nil, untrusted(path, "its last line is incomplete")
	}
	var out []T
	for i, line := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
		if len(data) == 0 {
			break
		}
		var v T
		if err := decodeRecord(path, line, &v, want, func() int { return format(&v) }); err != nil {
			var rerr *RecordError
			if errors.As(err, &rerr) {
				rerr.Err = fmt.Errorf("line %d: %w", i+1, rerr.Err)
			}
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

var rawMessage = reflect.TypeOf(json.RawMessage(nil))

// encode renders a record the way every record is stored: indented JSON with
// a final newline, no HTML escaping. Struct fields keep their declared order
// and map keys are sorted, so equal records are equal bytes.
func encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
