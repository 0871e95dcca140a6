// A small JSON Schema validator for the subset the forms build: type, enum, const, required, properties,
// additionalProperties: false, items, min/max (exclusive too), multipleOf, lengths, pattern, item counts.
// Keywords outside the subset are ignored here; the server validates everything anyway.

const TYPE_CHECKS = {
  string: (v) => typeof v === "string",
  number: (v) => typeof v === "number" && Number.isFinite(v),
  integer: (v) => Number.isInteger(v),
  boolean: (v) => typeof v === "boolean",
  object: (v) => v !== null && typeof v === "object" && !Array.isArray(v),
  array: (v) => Array.isArray(v),
  null: (v) => v === null,
};

// Return a list of {path, message} for value against schema; empty when it conforms.
export function validate(schema, value, path = "") {
  if (!schema || typeof schema !== "object") return [];
  const errors = [];
  const say = (message) => errors.push({ path: path || "(arguments)", message });
  const types = schema.type === undefined ? [] : [].concat(schema.type);
  if (types.length && !types.some((t) => TYPE_CHECKS[t] && TYPE_CHECKS[t](value))) {
    say(`must be ${types.map(article).join(" or ")}`);
    return errors;
  }
  if (schema.enum && !schema.enum.some((option) => sameJson(option, value))) {
    say(`must be one of ${schema.enum.map((o) => JSON.stringify(o)).join(", ")}`);
  }
  if ("const" in schema && !sameJson(schema.const, value)) say(`must be ${JSON.stringify(schema.const)}`);
  if (typeof value === "number") checkNumber(schema, value, say);
  if (typeof value === "string") checkString(schema, value, say);
  if (Array.isArray(value)) errors.push(...checkArray(schema, value, path, say));
  if (TYPE_CHECKS.object(value)) errors.push(...checkObject(schema, value, path, say));
  return errors;
}

function checkNumber(schema, value, say) {
  if (schema.minimum !== undefined && value < schema.minimum) say(`must be at least ${schema.minimum}`);
  if (schema.maximum !== undefined && value > schema.maximum) say(`must be at most ${schema.maximum}`);
  if (schema.exclusiveMinimum !== undefined && value <= schema.exclusiveMinimum) {
    say(`must be more than ${schema.exclusiveMinimum}`);
  }
  if (schema.exclusiveMaximum !== undefined && value >= schema.exclusiveMaximum) {
    say(`must be less than ${schema.exclusiveMaximum}`);
  }
  if (schema.multipleOf && !Number.isInteger(value / schema.multipleOf)) say(`must be a multiple of ${schema.multipleOf}`);
}

function checkString(schema, value, say) {
  const length = [...value].length;
  if (schema.minLength !== undefined && length < schema.minLength) say(`must be at least ${schema.minLength} characters`);
  if (schema.maxLength !== undefined && length > schema.maxLength) say(`must be at most ${schema.maxLength} characters`);
  if (schema.pattern) {
    try {
      if (!new RegExp(schema.pattern, "u").test(value)) say(`must match ${schema.pattern}`);
    } catch {
      // A pattern JavaScript cannot compile is left to the server.
    }
  }
}

function checkArray(schema, value, path, say) {
  if (schema.minItems !== undefined && value.length < schema.minItems) say(`needs at least ${schema.minItems} items`);
  if (schema.maxItems !== undefined && value.length > schema.maxItems) say(`takes at most ${schema.maxItems} items`);
  if (!schema.items || typeof schema.items !== "object") return [];
  return value.flatMap((item, index) => validate(schema.items, item, `${path}[${index}]`));
}

function checkObject(schema, value, path, say) {
  const errors = [];
  const properties = schema.properties || {};
  for (const name of schema.required || []) {
    if (!(name in value)) errors.push({ path: join(path, name), message: "is required" });
  }
  for (const [name, item] of Object.entries(value)) {
    if (name in properties) {
      errors.push(...validate(properties[name], item, join(path, name)));
    } else if (schema.additionalProperties === false) {
      say(`has no property ${JSON.stringify(name)}`);
    } else if (typeof schema.additionalProperties === "object") {
      errors.push(...validate(schema.additionalProperties, item, join(path, name)));
    }
  }
  return errors;
}

function join(path, name) {
  return path ? `${path}.${name}` : name;
}

function article(type) {
  return { integer: "an integer", object: "an object", array: "an array", null: "null" }[type] || `a ${type}`;
}

function sameJson(a, b) {
  return JSON.stringify(a) === JSON.stringify(b);
}
