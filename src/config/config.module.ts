/**
 * Global module that provides the validated {@link AppConfig} under the {@link APP_CONFIG} token.
 *
 * `imports: [ConfigModule]` reads the configuration from `process.env` with {@link loadConfig} (and fails
 * fast on invalid variables); `ConfigModule.forRoot(config)` provides a given configuration instead (tests,
 * several apps in one process). Use one or the other within one application, not both.
 */
import { type DynamicModule, Global, Module } from '@nestjs/common';
import { APP_CONFIG, type AppConfig, loadConfig } from './config.js';

@Global()
@Module({
  providers: [{ provide: APP_CONFIG, useFactory: (): AppConfig => loadConfig() }],
  exports: [APP_CONFIG],
})
export class ConfigModule {
  /**
   * @param config the configuration to provide; defaults to `loadConfig(process.env)`.
   * @throws Error from {@link loadConfig} when the environment is invalid and no config is given.
   */
  static forRoot(config: AppConfig = loadConfig()): DynamicModule {
    return {
      module: ConfigModule,
      global: true,
      providers: [{ provide: APP_CONFIG, useValue: config }],
      exports: [APP_CONFIG],
    };
  }
}
