package adapter;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;

/** One created component instance. */
interface Instance {
  JsonElement call(String method, JsonObject args) throws Exception;

  /** True when nothing this instance runs in the background has work it could do now. */
  default boolean quiet() {
    return true;
  }

  /** The earliest fake-clock deadline a background loop of this instance waits for, if any. */
  default Long deadlineNs() {
    return null;
  }

  default void close() {}
}
