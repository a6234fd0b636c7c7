#version 450
// Sampling: filtered, explicit level, fetch, shadow comparison and derivatives.
layout(location = 0) in vec2 uv;
layout(location = 0) out vec4 result;
layout(binding = 0) uniform sampler2D colors;
layout(binding = 1) uniform sampler2DShadow depth;
layout(binding = 2) uniform sampler2DArray layers;

void main() {
    vec4 a = texture(colors, uv);
    vec4 b = textureLod(colors, uv * 2.0, 1.0);
    vec4 c = texelFetch(colors, ivec2(uv * 8.0), 0);
    float d = texture(depth, vec3(uv, 0.5));
    vec4 e = texture(layers, vec3(uv, 1.0));
    result = (a + b + c + e) * d + vec4(dFdx(uv.x), dFdy(uv.y), 0.0, 0.0);
}
