package contract

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/msgx/msgx/docs"
	"github.com/msgx/msgx/pkg/event"
)

// Validator checks records against the committed JSON Schemas of docs/contract (formats
// asserted: a date-time must be one).
type Validator struct {
	schemas map[string]*jsonschema.Schema
}

// NewValidator compiles the schemas of docs/contract.
func NewValidator() (*Validator, error) {
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	v := &Validator{schemas: map[string]*jsonschema.Schema{}}
	for _, name := range Schemas {
		b, err := fs.ReadFile(docs.Contract, "contract/"+name)
		if err != nil {
			return nil, err
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if err := c.AddResource(name, doc); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	for _, name := range Schemas {
		s, err := c.Compile(name)
		if err != nil {
			return nil, fmt.Errorf("compile %s: %w", name, err)
		}
		v.schemas[name] = s
	}
	return v, nil
}

// Value checks one JSON document against the schema named name.
func (v *Validator) Value(name string, value []byte) error {
	s, ok := v.schemas[name]
	if !ok {
		return fmt.Errorf("no schema %s", name)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(value))
	if err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	return s.Validate(inst)
}

// Record checks a record of topic (TopicChanges, TopicState or TopicHeartbeat, the default
// names) against the schemas: an event's key, headers (each once) and value; a heartbeat's
// schema_version and value. A null value is a state TOMBSTONE's; on the changes topic older msgx
// versions wrote one too.
func (v *Validator) Record(topic, key string, headers []event.Header, value []byte) error {
	var errs []error
	h := map[string]any{}
	for _, x := range headers {
		if _, ok := h[x.Key]; ok {
			errs = append(errs, fmt.Errorf("header %s: repeated", x.Key))
		}
		h[x.Key] = x.Value
	}
	if topic == TopicHeartbeat {
		if h[event.HeaderSchemaVersion] != event.SchemaVersion {
			errs = append(errs, fmt.Errorf("header %s: %v, not %s", event.HeaderSchemaVersion, h[event.HeaderSchemaVersion], event.SchemaVersion))
		}
		if err := v.Value(BeatSchema, value); err != nil {
			errs = append(errs, fmt.Errorf("value: %w", err))
		}
		return errors.Join(errs...)
	}
	if err := v.Value(KeySchema, []byte(fmt.Sprintf("%q", key))); err != nil {
		errs = append(errs, fmt.Errorf("key: %w", err))
	}
	if s := v.schemas[HeadersSchema]; s != nil {
		if err := s.Validate(h); err != nil {
			errs = append(errs, fmt.Errorf("headers: %w", err))
		}
	}
	switch {
	case topic == TopicState && value == nil:
		if h[event.HeaderEventType] != event.Tombstone {
			errs = append(errs, errors.New("a null value on the state topic must be a TOMBSTONE"))
		}
	case topic == TopicState:
		if err := v.Value(StateSchema, value); err != nil {
			errs = append(errs, fmt.Errorf("value: %w", err))
		}
	case topic == TopicChanges && value != nil:
		if err := v.Value(ChangesSchema, value); err != nil {
			errs = append(errs, fmt.Errorf("value: %w", err))
		}
	case topic != TopicChanges:
		errs = append(errs, fmt.Errorf("topic %s is not in the contract", topic))
	}
	return errors.Join(errs...)
}
