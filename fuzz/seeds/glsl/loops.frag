#version 450
// A loop with break and continue, a switch, an array and a function call.
layout(location = 0) flat in ivec2 counts;
layout(location = 1) in float x;
layout(location = 0) out vec4 result;

float weight(int i, float v) {
    return v / float(i + 1);
}

void main() {
    float values[4] = float[4](1.0, 0.5, 0.25, 0.125);
    float sum = 0.0;
    for (int i = 0; i < counts.x; i++) {
        if (i == counts.y)
            continue;
        if (sum > 8.0)
            break;
        sum += weight(i, values[i & 3] * x);
    }
    switch (counts.y) {
    case 0: sum *= 2.0; break;
    case 1:
    case 2: sum -= 1.0; break;
    default: sum = -sum;
    }
    result = vec4(sum, x, 0.0, 1.0);
}
