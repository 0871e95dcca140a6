// Forms generated from a JSON Schema: strings, numbers, integers, booleans, enums, arrays and nested objects.
// Required fields are marked; read() returns {value, errors} with the validator's messages, so nothing invalid
// is sent. A part of a schema the form cannot express (oneOf, $ref, ...) becomes a raw JSON box for that value.

import { validate } from "./schema_validate.js";

const SIMPLE_TYPES = ["string", "number", "integer", "boolean", "object", "array"];

// Build a form for an object schema; returns {element, read()}.
export function buildForm(schema) {
  const editor = editorFor(schema || { type: "object" }, "", true);
  return {
    element: editor.element,
    read() {
      const { value = {}, errors } = editor.read();
      return { value, errors: errors.length ? errors : validate(schema, value) };
    },
  };
}

// True when the form can express schema (otherwise the caller offers raw JSON only).
export function formSupports(schema) {
  if (!schema || typeof schema !== "object") return false;
  if (["oneOf", "anyOf", "allOf", "$ref", "not", "if"].some((key) => key in schema)) return false;
  if (schema.enum) return true;
  if (!SIMPLE_TYPES.includes(schema.type)) return false;
  if (schema.type === "object") return Object.values(schema.properties || {}).every(formSupports);
  if (schema.type === "array") return formSupports(schema.items);
  return true;
}

// The editor for one value: a raw JSON box for what the form cannot express.
function editorFor(schema, path, required) {
  if (!formSupports(schema)) return jsonEditor(schema, path);
  if (schema.enum) return enumEditor(schema, path, required);
  const build = { object: objectEditor, array: arrayEditor, boolean: booleanEditor,
                  number: numberEditor, integer: numberEditor, string: stringEditor }[schema.type];
  return build(schema, path, required);
}

// A fieldset (or, at the top, a plain block) with a labelled editor per property.
function objectEditor(schema, path, required) {
  const element = el(path ? "fieldset" : "div", "object-field");
  const requiredNames = new Set(schema.required || []);
  const fields = Object.entries(schema.properties || {}).map(([name, child]) => {
    const childPath = path ? `${path}.${name}` : name;
    const editor = editorFor(child, childPath, requiredNames.has(name));
    element.append(labelled(name, child, requiredNames.has(name), childPath, editor.element));
    return [name, editor];
  });
  if (!fields.length) element.append(el("p", "hint", "No arguments."));
  return {
    element,
    read() {
      const value = {};
      const errors = [];
      for (const [name, editor] of fields) {
        const field = editor.read();
        errors.push(...field.errors);
        if (field.value !== undefined) value[name] = field.value;
        else if (requiredNames.has(name)) errors.push({ path: path ? `${path}.${name}` : name, message: "is required" });
      }
      // An optional nested object left empty is left out, rather than sent as {} with its own fields missing.
      if (path && !required && !Object.keys(value).length) return { value: undefined, errors: [] };
      return { value, errors };
    },
  };
}

// A list of item editors with add and remove buttons; no items means the value is left out.
function arrayEditor(schema, path) {
  const element = el("div", "array-field");
  const list = el("ol", "array-items");
  const add = el("button", "add-item", "+ item");
  add.type = "button";
  const items = [];
  add.addEventListener("click", () => {
    const editor = editorFor(schema.items, `${path}[${items.length}]`, true);
    const row = el("li", "array-item");
    const remove = el("button", "remove-item", "remove");
    remove.type = "button";
    remove.addEventListener("click", () => {
      items.splice(items.indexOf(editor), 1);
      row.remove();
    });
    row.append(editor.element, remove);
    list.append(row);
    items.push(editor);
  });
  element.append(list, add);
  return {
    element,
    read() {
      if (!items.length) return { value: undefined, errors: [] };
      const results = items.map((editor) => editor.read());
      return { value: results.map((r) => r.value), errors: results.flatMap((r) => r.errors) };
    },
  };
}

function stringEditor(schema, path) {
  const input = inputFor(path, schema.maxLength > 200 ? "textarea" : "input");
  if (schema.default !== undefined) input.placeholder = String(schema.default);
  return { element: input, read: () => ({ value: input.value === "" ? undefined : input.value, errors: [] }) };
}

// A text box read as a number, so anything typed gets a message instead of silently vanishing.
function numberEditor(schema, path) {
  const input = inputFor(path, "input");
  input.inputMode = schema.type === "integer" ? "numeric" : "decimal";
  if (schema.default !== undefined) input.placeholder = String(schema.default);
  return {
    element: input,
    read() {
      const text = input.value.trim();
      if (text === "") return { value: undefined, errors: [] };
      const value = Number(text);
      if (Number.isFinite(value)) return { value, errors: [] };
      return { value: undefined, errors: [{ path, message: `must be a number, not ${JSON.stringify(text)}` }] };
    },
  };
}

function booleanEditor(schema, path) {
  return choiceEditor(path, [true, false], schema.default);
}

function enumEditor(schema, path) {
  return choiceEditor(path, schema.enum, schema.default);
}

// A select whose first option means "leave it out"; options carry their JSON so any enum value round-trips.
function choiceEditor(path, options, fallback) {
  const select = inputFor(path, "select");
  select.append(option("", fallback === undefined ? "(not set)" : `(not set: ${JSON.stringify(fallback)})`));
  for (const choice of options) select.append(option(JSON.stringify(choice), String(choice)));
  const read = () => ({ value: select.value === "" ? undefined : JSON.parse(select.value), errors: [] });
  return { element: select, read };
}

function jsonEditor(schema, path) {
  const input = inputFor(path, "textarea");
  input.classList.add("json");
  input.placeholder = "JSON value";
  return {
    element: input,
    read() {
      if (input.value.trim() === "") return { value: undefined, errors: [] };
      try {
        return { value: JSON.parse(input.value), errors: [] };
      } catch {
        return { value: undefined, errors: [{ path, message: "is not valid JSON" }] };
      }
    },
  };
}

function labelled(name, schema, required, path, control) {
  const row = el("div", "field");
  row.dataset.path = path;
  const label = el("label", required ? "required" : "", schema.title || name);
  if (control.id) label.htmlFor = control.id;
  const kind = el("span", "kind", schema.enum ? "enum" : schema.type || "json");
  row.append(label, kind, control);
  if (schema.description) row.append(el("small", "description", schema.description));
  return row;
}

let nextInput = 1;

function inputFor(path, tag) {
  const input = document.createElement(tag);
  input.name = path;
  input.id = `field-${nextInput++}`;
  if (tag === "input") input.type = "text";
  return input;
}

function option(value, text) {
  const item = document.createElement("option");
  item.value = value;
  item.textContent = text;
  return item;
}

// Create an element with a class and text (never innerHTML: server text is never parsed as markup).
export function el(tag, className = "", text = "") {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text) node.textContent = text;
  return node;
}
