#version 450
// Uniform block, varyings, a branch, a discard and built-in functions.
layout(location = 0) in vec4 color;
layout(location = 1) in vec2 coord;
layout(location = 0) out vec4 result;
layout(std140, binding = 0) uniform Params {
    vec4 scale;
    float threshold;
    int mode;
};

void main() {
    vec4 c = color * scale;
    if (length(coord) > threshold) {
        c.rgb = mix(c.rgb, vec3(1.0) - c.rgb, 0.25);
    } else if (mode == 2) {
        discard;
    }
    result = clamp(vec4(pow(abs(c.xyz), vec3(2.2)), fract(c.w)), 0.0, 1.0);
}
